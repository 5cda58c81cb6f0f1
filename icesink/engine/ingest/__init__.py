"""Sources icesink replicates into its own store before sinks read them (Postgres), one module per kind."""
