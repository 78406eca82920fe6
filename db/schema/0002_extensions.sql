-- pgcrypto signs keyset cursors (hmac). It is a trusted extension, so a database
-- owner without superuser may create it.
create extension if not exists pgcrypto;
