"""The base app: tenancy and credentials, readers and the guards compiled to SQL, erasure
holds, subjects, threads and the API plumbing. It imports no other app."""
