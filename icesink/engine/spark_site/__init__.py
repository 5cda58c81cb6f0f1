"""A directory that spark.py puts on the path of the Python processes Spark starts: see sitecustomize.py."""
