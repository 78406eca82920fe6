#!/bin/sh
# Writes PgBouncer's auth file from the passwords in the environment (the same ones
# the postgres service is given), so no password is baked into the image, then runs
# PgBouncer as the container's main process: SIGTERM from compose reaches it.
set -eu
: "${POSTGRES_USER:?the owner's login}" "${POSTGRES_PASSWORD:?the owner's password}"
: "${REQUEST_LOGIN_USER:=api_login}" "${REQUEST_LOGIN_PASSWORD:?the request login's password}"

# One "name" "password" line per login; a double quote inside is written twice.
quoted() { printf '"%s"' "$(printf '%s' "$1" | sed 's/"/""/g')"; }

umask 077
auth_file=/var/lib/pgbouncer/userlist.txt
{
  printf '%s %s\n' "$(quoted "$POSTGRES_USER")" "$(quoted "$POSTGRES_PASSWORD")"
  printf '%s %s\n' "$(quoted "$REQUEST_LOGIN_USER")" "$(quoted "$REQUEST_LOGIN_PASSWORD")"
} > "$auth_file"

exec pgbouncer /etc/pgbouncer/pgbouncer.ini
