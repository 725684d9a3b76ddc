"""The request plumbing every app's routes share: the error shape and its codes, fields,
parsers and renderers, a transaction per request, cursors, the limits on bodies, credentials'
concurrency and writes, and queueing a task when a request commits."""
