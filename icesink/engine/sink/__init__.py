"""The Iceberg sink: table setup, the copy-on-write writer, and the exactly-once committer."""
