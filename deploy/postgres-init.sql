-- Run once by the postgres image on a new volume (docker-compose.yml mounts it into
-- /docker-entrypoint-initdb.d). POSTGRES_USER (kindmem) owns the tables and runs migrations;
-- kindmem_app is what web and workers log in as: it owns nothing and cannot bypass row
-- security, so every tenant-owned row it reads or writes is its request's tenant's.
CREATE ROLE kindmem_app LOGIN PASSWORD 'kindmem_app' NOSUPERUSER NOCREATEDB NOCREATEROLE NOBYPASSRLS;
