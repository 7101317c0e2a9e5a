-- Runs once, when the PostgreSQL volume is first created (docker-entrypoint-initdb.d).
-- POSTGRES_DB makes the `temporal` database; Temporal's visibility store needs a second one.
-- Creating both here keeps the schema job free of CREATE DATABASE, which fails on a rerun.
CREATE DATABASE temporal_visibility;
