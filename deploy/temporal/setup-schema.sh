#!/bin/sh
# Temporal's schema job (temporalio/admin-tools): brings the `temporal` and
# `temporal_visibility` databases up to the schema this server version needs. Safe to rerun on
# every `docker compose up`: setup-schema leaves a database that already has a newer version
# alone, and update-schema applies only the versions it has not applied yet.
set -eu
: "${POSTGRES_SEEDS:?the PostgreSQL host}" "${POSTGRES_USER:?}" "${SQL_PASSWORD:?}"
schema_root=/etc/temporal/schema/postgresql/v12
for store in temporal:temporal temporal_visibility:visibility; do
    database=${store%%:*}
    versions=${schema_root}/${store##*:}/versioned
    echo "schema of ${database}: from ${versions}"
    temporal-sql-tool --plugin postgres12 --ep "${POSTGRES_SEEDS}" -p "${DB_PORT:-5432}" \
        -u "${POSTGRES_USER}" --db "${database}" setup-schema -v 0.0
    temporal-sql-tool --plugin postgres12 --ep "${POSTGRES_SEEDS}" -p "${DB_PORT:-5432}" \
        -u "${POSTGRES_USER}" --db "${database}" update-schema -d "${versions}"
done
echo "Temporal's schema is up to date."
