-- The app's settings for a signed-in person (server/app/settings.ts): who they are
-- and where, their API keys (Settings > API > REST) and their second factor. These
-- operations take a session, never an API key: REST does not create, list or revoke
-- keys (SPEC "API keys" item 1).

create or replace function app.require_session() returns void language plpgsql stable as $$
begin
  if coalesce(current_setting('app.session_id', true), '') = '' then
    perform app.fail('UNAUTHORIZED', 401, 'This operation is for people signed in to the app, not for API keys.');
  end if;
end $$;

-- The page chrome: the person, the organization the page shows, the ones to switch
-- to (switching changes what the pages show, never an API key's scope), the
-- capabilities there, and whether a second factor is set up.
create or replace function api.app_overview(args jsonb) returns jsonb language plpgsql stable as $$
begin
  perform app.require_session();
  return jsonb_build_object(
    'person', (select jsonb_build_object('id', u.id, 'email', u.email, 'name', u.name, 'emailVerified', u.email_verified)
                 from app.users u where u.id = app.user_id()),
    'organization', (select jsonb_build_object('id', o.id, 'slug', o.slug, 'name', o.name, 'role', app.role(),
                                               'requireMfa', o.require_mfa)
                       from app.organizations o where o.id = app.org_id()),
    'organizations', (select coalesce(jsonb_agg(jsonb_build_object('id', o.id, 'slug', o.slug, 'name', o.name)
                                                order by lower(o.name), o.id), '[]')
                        from app.memberships m join app.organizations o on o.id = m.organization_id
                       where m.user_id = app.user_id() and not m.disabled),
    'capabilities', app.capabilities(),
    'totp', app.totp_status());
end $$;

-- The person's own keys, newest first, revoked ones included (greyed out by the page).
create or replace function api.app_keys_list(args jsonb) returns jsonb language plpgsql stable as $$
begin
  perform app.require_session();
  return jsonb_build_object('keys', (select coalesce(jsonb_agg(jsonb_build_object(
             'id', k.id, 'name', k.name, 'createdAt', app.ms(k.created_at), 'lastUsedAt', app.ms(k.last_used_at),
             'expiresAt', app.ms(k.expires_at), 'revoked', k.revoked_at is not null,
             'expired', k.expires_at is not null and k.expires_at <= app.now())
             order by k.created_at desc, k.id), '[]')
           from app.api_keys k where k.user_id = app.user_id()));
end $$;

-- A new key of the person: Owners, Admins and Developers. The server made the secret
-- and sends only its hash; the page shows the secret once.
create or replace function api.app_key_create(args jsonb) returns jsonb language plpgsql as $$
declare
  key_name text := app.trim_space(args->>'name');
  expires timestamptz := case when args->>'expiresAt' is not null then app.from_ms((args->>'expiresAt')::bigint) end;
  issues jsonb := '[]';
  k app.api_keys;
begin
  perform app.require_session();
  perform app.require_developer('Creating an API key');
  if key_name is null or key_name = '' then
    issues := issues || jsonb_build_object('path', 'name', 'message', 'required, not blank');
  elsif length(key_name) > app.limit('apiKey.nameMaxUnits') then
    issues := issues || jsonb_build_object('path', 'name', 'message', format('at most %s characters', app.limit('apiKey.nameMaxUnits')));
  end if;
  if expires is not null and expires <= app.now() then
    issues := issues || jsonb_build_object('path', 'expiresAt', 'message', 'must be in the future');
  end if;
  if jsonb_array_length(issues) > 0 then
    perform app.fail('INVALID_BODY', 400, 'The key is not valid: ' || (issues->0->>'path') || ' ' || (issues->0->>'message'),
      jsonb_build_object('issues', issues));
  end if;
  -- The hash is never readable by the request role: nothing returns it.
  insert into app.api_keys (user_id, name, key_hash, expires_at)
  values (app.user_id(), key_name, decode(args->>'keyHash', 'hex'), expires)
  returning id, name, expires_at into k.id, k.name, k.expires_at;
  perform app.audit('api_key.created', 'api_key', k.id::text, jsonb_build_object('name', k.name, 'expiresAt', app.ms(k.expires_at)));
  return jsonb_build_object('id', k.id, 'name', k.name, 'expiresAt', app.ms(k.expires_at));
end $$;

-- Revokes one of the person's own keys; another person's key is as absent as a
-- missing one. Revoking twice changes nothing.
create or replace function api.app_key_revoke(args jsonb) returns jsonb language plpgsql as $$
declare
  k app.api_keys;
begin
  perform app.require_session();
  select id, name, revoked_at into k.id, k.name, k.revoked_at
    from app.api_keys where id = app.as_uuid(args->>'keyId') and user_id = app.user_id();
  if k.id is null then
    perform app.fail('NOT_FOUND', 404, 'No such key.');
  end if;
  if k.revoked_at is null then
    update app.api_keys set revoked_at = app.now() where id = k.id;
    perform app.audit('api_key.revoked', 'api_key', k.id::text, jsonb_build_object('name', k.name));
  end if;
  return jsonb_build_object('id', k.id, 'revoked', true);
end $$;

-- Whether the person has a confirmed second factor.
create or replace function app.totp_status() returns jsonb
language sql stable security definer set search_path = pg_catalog, app as $$
  select jsonb_build_object('enabled', exists (select 1 from app.user_totp f
                                                where f.user_id = app.user_id() and f.confirmed_at is not null))
$$;

-- Sets the person's second factor: a secret the server generated and a code from it
-- that the server verified (its time step), so a factor is only ever stored working.
create or replace function app.totp_set(secret text, step bigint) returns void
language plpgsql security definer set search_path = pg_catalog, app as $$
begin
  if app.user_id() is null or coalesce(current_setting('app.session_id', true), '') = '' then
    raise exception 'app.totp_set needs a signed-in person';
  end if;
  insert into app.user_totp (user_id, secret, confirmed_at, last_step)
  values (app.user_id(), secret, app.now(), step)
  on conflict (user_id) do update set secret = excluded.secret, confirmed_at = excluded.confirmed_at,
                                      last_step = excluded.last_step, created_at = app.now();
end $$;

create or replace function app.totp_remove() returns boolean
language sql security definer set search_path = pg_catalog, app as $$
  with removed as (delete from app.user_totp where user_id = app.user_id() returning 1)
  select exists (select 1 from removed)
$$;

create or replace function api.app_totp_set(args jsonb) returns jsonb language plpgsql as $$
begin
  perform app.require_session();
  perform app.totp_set(args->>'secret', (args->>'step')::bigint);
  perform app.audit('totp.enabled', 'user', app.user_id()::text, '{}');
  return jsonb_build_object('enabled', true);
end $$;

-- Removing the factor is refused where an organization of the person requires one.
create or replace function api.app_totp_remove(args jsonb) returns jsonb language plpgsql as $$
declare
  requiring text := (select o.name from app.memberships m join app.organizations o on o.id = m.organization_id
                      where m.user_id = app.user_id() and not m.disabled and o.require_mfa limit 1);
begin
  perform app.require_session();
  if requiring is not null then
    perform app.fail('MFA_REQUIRED', 403, format('%s requires a second factor; it cannot be removed.', requiring));
  end if;
  if app.totp_remove() then
    perform app.audit('totp.removed', 'user', app.user_id()::text, '{}');
  end if;
  return jsonb_build_object('enabled', false);
end $$;

revoke execute on function app.totp_status, app.totp_set, app.totp_remove from public;
grant execute on function app.require_session, app.totp_status, app.totp_set, app.totp_remove, api.app_overview,
  api.app_keys_list, api.app_key_create, api.app_key_revoke, api.app_totp_set, api.app_totp_remove to api;

-- The organization's active members, for the pages that pick one (competence grants).
create or replace function api.app_members(args jsonb) returns jsonb language plpgsql stable as $$
begin
  perform app.require_session();
  return jsonb_build_object('members', (select coalesce(jsonb_agg(jsonb_build_object(
             'id', u.id, 'name', u.name, 'email', u.email, 'role', m.role) order by lower(u.name), lower(u.email)), '[]')
           from app.memberships m join app.users u on u.id = m.user_id
          where m.organization_id = app.org_id() and not m.disabled));
end $$;

grant execute on function api.app_members to api;

-- Settings > Identity clients: the organization's applications, for its owners and
-- admins (the policy shows no one else any).
create or replace function api.app_identity_clients_list(args jsonb) returns jsonb language plpgsql stable as $$
begin
  perform app.require_session();
  return jsonb_build_object('clients', (select coalesce(jsonb_agg(app.identity_client_json(c.organization_id, c.key)
             order by lower(c.name), c.key), '[]')
           from app.identity_clients c where c.organization_id = app.org_id()));
end $$;

grant execute on function api.app_identity_clients_list to api;
