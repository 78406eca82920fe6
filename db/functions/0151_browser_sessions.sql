-- Browser sessions (docs/skills.md "Browser sessions"): cookies and local storage an
-- operator imports so the service can act in a signed-in browser. The server seals
-- them (AES-256-GCM under BROWSER_SESSION_KEY, server/core/sealed.ts) before this
-- function is called: no cookie or storage value ever reaches SQL, only the sealed
-- bytes and what may be shown (name, domains, cookie count, expiry), which the
-- server derives from the same body. The request role cannot read the sealed column
-- (db/policies/browser_sessions.sql); revoking erases it.

-- The deploymentEditor capability: the caller is on the operators' allowlist
-- (app.deployment_editors, deployment-wide, kept by operators). A role alone, owner
-- included, never gives it.
create or replace function app.is_deployment_editor() returns boolean language plpgsql stable as $$
begin
  return exists (select 1 from app.deployment_editors d where d.user_id = app.user_id());
end $$;

create or replace function app.deployment_editor() returns void language plpgsql stable as $$
begin
  if not app.is_deployment_editor() then
    perform app.fail('ROLE_FORBIDDEN', 403,
      'Importing and revoking browser sessions needs the deploymentEditor capability: an operator puts you on the '
      || 'deployment''s allowlist; no organization role gives it.',
      jsonb_build_object('capability', 'deploymentEditor'));
  end if;
end $$;

-- What a session may show. Built from the columns the request role may read, never
-- from the sealed cookies.
create or replace function app.browser_session_json(organization uuid, session_id uuid) returns jsonb language sql stable as $$
  select jsonb_build_object('id', b.id, 'name', b.name, 'domains', to_jsonb(b.domains), 'cookieCount', b.cookie_count,
    'expiresAt', app.ms(b.expires_at), 'createdBy', b.created_by, 'createdAt', app.ms(b.created_at),
    'revokedAt', app.ms(b.revoked_at), 'revokedBy', b.revoked_by)
    from app.browser_sessions b
   where b.organization_id = organization and b.id = session_id
$$;

create or replace function app.browser_session_visible(wanted text) returns uuid language plpgsql stable as $$
declare
  visible uuid;
begin
  select b.id into visible from app.browser_sessions b where b.organization_id = app.org_id() and b.id = app.as_uuid(wanted);
  if visible is null then
    perform app.fail('BROWSER_SESSION_NOT_FOUND', 404, 'Browser session not found.');
  end if;
  return visible;
end $$;

-- Every session of the organization, newest first, revoked ones included (their
-- record stays).
create or replace function api.browser_sessions_list(args jsonb) returns jsonb language plpgsql stable as $$
begin
  return jsonb_build_object('browserSessions', (
    select coalesce(jsonb_agg(app.browser_session_json(b.organization_id, b.id) order by b.created_at desc, b.id desc), '[]')
      from app.browser_sessions b
     where b.organization_id = app.org_id()));
end $$;

create or replace function api.browser_session_get(args jsonb) returns jsonb language plpgsql stable as $$
begin
  return jsonb_build_object('browserSession', app.browser_session_json(app.org_id(), app.browser_session_visible(args->>'id')));
end $$;

-- args: {id, name, domains, cookieCount, expiresAt, sealed (base64), keyId}, all
-- written by the server (the body's shape is strict and mapped, never passed on);
-- sealed is null when the deployment has no BROWSER_SESSION_KEY.
create or replace function api.browser_session_import(args jsonb) returns jsonb language plpgsql as $$
declare
  session_id uuid := app.as_uuid(args->>'id');
begin
  perform app.deployment_editor();
  if args->>'sealed' is null then
    perform app.fail('BROWSER_SESSION_KEY_UNCONFIGURED', 503,
      'This deployment stores no browser sessions: BROWSER_SESSION_KEY is not configured.');
  end if;
  insert into app.browser_sessions (organization_id, id, name, domains, cookie_count, expires_at, sealed, key_id, created_by)
  values (app.org_id(), session_id, app.clean_identifier(args->>'name'),
          array(select jsonb_array_elements_text(args->'domains')), (args->>'cookieCount')::integer,
          app.from_ms((args->>'expiresAt')::bigint), decode(args->>'sealed', 'base64'), args->>'keyId', app.user_id());
  perform app.audit('browser_session.imported', 'browser_session', session_id::text,
    jsonb_build_object('name', app.clean_identifier(args->>'name'), 'domains', args->'domains', 'cookieCount', (args->>'cookieCount')::integer));
  return jsonb_build_object('browserSession', app.browser_session_json(app.org_id(), session_id));
end $$;

-- Revoking erases the sealed cookies and keeps the record. Idempotent: a revoked
-- session answers as it is, with its first revocation, and nothing is written.
create or replace function api.browser_session_revoke(args jsonb) returns jsonb language plpgsql as $$
declare
  session_id uuid := app.browser_session_visible(args->>'id');
begin
  perform app.deployment_editor();
  update app.browser_sessions
     set sealed = null, revoked_at = app.now(), revoked_by = app.user_id()
   where organization_id = app.org_id() and id = session_id and revoked_at is null;
  if found then
    perform app.audit('browser_session.revoked', 'browser_session', session_id::text, '{}');
  end if;
  return jsonb_build_object('browserSession', app.browser_session_json(app.org_id(), session_id));
end $$;

grant execute on function app.is_deployment_editor, app.deployment_editor, app.browser_session_json,
  app.browser_session_visible, api.browser_sessions_list, api.browser_session_get, api.browser_session_import,
  api.browser_session_revoke to api;
