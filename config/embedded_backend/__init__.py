"""A Django database backend: PostgreSQL on the embedded server (`config.embedded_db`),
started or joined on the first connection, so that loading the settings starts nothing."""
