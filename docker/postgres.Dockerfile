# PostgreSQL 15 with pg_cron, which ticks automation schedules.
FROM postgres:15-bookworm
RUN apt-get update \
 && apt-get install -y --no-install-recommends postgresql-15-cron \
 && rm -rf /var/lib/apt/lists/*
CMD ["postgres", "-c", "shared_preload_libraries=pg_cron", "-c", "cron.database_name=tale"]
