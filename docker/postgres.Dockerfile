# PostgreSQL 15 with pg_cron, which ticks automation schedules, pgvector, which ranks
# knowledge passages by embedding, and rum, whose index answers full-text searches in
# rank order (all from the PostgreSQL project's apt repository the image is built on).
# The tag names the minor release, so a rebuild gets the same server.
FROM postgres:15.10-bookworm
RUN apt-get update \
 && apt-get install -y --no-install-recommends postgresql-15-cron postgresql-15-pgvector postgresql-15-rum \
 && rm -rf /var/lib/apt/lists/*
# pg_cron runs only when preloaded, and schedules jobs in one database: the service's.
CMD ["postgres", "-c", "shared_preload_libraries=pg_cron", "-c", "cron.database_name=tale"]
