# PgBouncer in transaction pooling mode, from Debian's own package, between the
# service's processes and PostgreSQL: many client connections share a few server
# connections. pg_isready (postgresql-client) is its health check.
FROM debian:12.8-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends pgbouncer postgresql-client \
 && rm -rf /var/lib/apt/lists/* \
 && install -d -o postgres -g postgres -m 0700 /var/lib/pgbouncer
COPY docker/pgbouncer/pgbouncer.ini /etc/pgbouncer/pgbouncer.ini
# Executable as committed (git keeps the mode).
COPY docker/pgbouncer/entrypoint.sh /usr/local/bin/pgbouncer-entrypoint
# The postgres user comes with postgresql-common, which the package depends on.
USER postgres
EXPOSE 6432
ENTRYPOINT ["/usr/local/bin/pgbouncer-entrypoint"]
