"""A Django database backend: Django's PostgreSQL backend, whose check of a kept connection
before a request uses it costs no round trip when the connection is plainly alive."""
