"""Inputs as Spark streaming sources (PySpark's Python data source API), with their own offsets."""
