#!/bin/sh
# Runs once, on an empty data volume: the login request connections use, with a
# password of its own (REQUEST_LOGIN_PASSWORD), so the API's request pool never holds
# the owner's credentials. The migrations find the role already there, make it a
# member of the request role `api`, and leave its password alone.
set -e
psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname "$POSTGRES_DB" \
  -v password="$REQUEST_LOGIN_PASSWORD" <<'SQL'
create role api_login login noinherit nobypassrls password :'password';
SQL
