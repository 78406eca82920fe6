-- Sign-in for people (server/app): sessions, second factors and the throttle. The
-- password itself is checked by the server (scrypt, server/auth/credentials.ts); the
-- functions here are the caller-less doors around it, SECURITY DEFINER because no
-- caller exists until a session does (as app.authenticate for API keys).

-- What signing in as an address needs: the person, their password hash and whether a
-- second factor follows. Null for an unknown address (the server still spends a
-- hash's time, so the answer's timing tells nothing).
create or replace function app.sign_in_lookup(address text) returns jsonb
language sql stable security definer set search_path = pg_catalog, app as $$
  select jsonb_build_object('userId', u.id, 'passwordHash', u.password_hash, 'emailVerified', u.email_verified,
           'hasTotp', exists (select 1 from app.user_totp f where f.user_id = u.id and f.confirmed_at is not null))
    from app.users u where lower(u.email) = lower(btrim(address))
$$;

-- Opens a session after a right password: complete at once, or pending its second
-- factor. The session the browser held before, if any, ends here: a sign-in always
-- rotates the cookie.
create or replace function app.session_open(person uuid, token_hash text, pending boolean, previous_hash text,
  source text, user_agent text) returns void
language plpgsql security definer set search_path = pg_catalog, app as $$
begin
  if previous_hash is not null then
    update app.sessions set revoked_at = app.now()
     where sessions.token_hash = decode(previous_hash, 'hex') and revoked_at is null;
  end if;
  insert into app.sessions (token_hash, user_id, stage, source, user_agent, expires_at)
  values (decode(session_open.token_hash, 'hex'), person, case when pending then 'pending' else 'complete' end,
          source, left(user_agent, 512), app.now() + app.limit('session.lifetimeSeconds') * interval '1 second');
end $$;

-- The second factor of a pending session: its person's TOTP secret and the last step
-- used; null when the session is not pending (or gone).
create or replace function app.session_pending_factor(token_hash text) returns jsonb
language sql stable security definer set search_path = pg_catalog, app as $$
  select jsonb_build_object('userId', s.user_id, 'secret', f.secret, 'lastStep', f.last_step)
    from app.sessions s join app.user_totp f on f.user_id = s.user_id and f.confirmed_at is not null
   where s.token_hash = decode(session_pending_factor.token_hash, 'hex') and s.stage = 'pending'
     and s.revoked_at is null and s.expires_at > app.now()
$$;

-- Completes a pending session with the time step of a code the server verified: a
-- step at or before the last one used is refused (a code works once). The pending
-- token ends and a new one (rotated) carries the complete session. False when the
-- session or the step is no longer good.
create or replace function app.session_complete(token_hash text, new_hash text, step bigint) returns boolean
language plpgsql security definer set search_path = pg_catalog, app as $$
declare
  s app.sessions;
begin
  select * into s from app.sessions
   where sessions.token_hash = decode(session_complete.token_hash, 'hex') and stage = 'pending'
     and revoked_at is null and expires_at > app.now()
  for update;
  if s.id is null then
    return false;
  end if;
  update app.user_totp set last_step = step
   where user_id = s.user_id and confirmed_at is not null and (last_step is null or last_step < step);
  if not found then
    return false;
  end if;
  update app.sessions
     set token_hash = decode(new_hash, 'hex'), stage = 'complete', mfa_at = app.now(), last_seen_at = app.now()
   where id = s.id;
  return true;
end $$;

-- Ends a session (sign-out).
create or replace function app.session_close(token_hash text) returns void
language sql security definer set search_path = pg_catalog, app as $$
  update app.sessions set revoked_at = app.now()
   where sessions.token_hash = decode(session_close.token_hash, 'hex') and revoked_at is null
$$;

-- The complete, live session a cookie names, for app.authenticate: its person and
-- whether the second factor was proven; null otherwise. Seen at most once a minute.
create or replace function app.session_holder(token_hash text) returns jsonb
language plpgsql security definer set search_path = pg_catalog, app as $$
declare
  s app.sessions;
begin
  select * into s from app.sessions
   where sessions.token_hash = decode(session_holder.token_hash, 'hex') and stage = 'complete'
     and revoked_at is null and expires_at > app.now();
  if s.id is null then
    return null;
  end if;
  if s.last_seen_at < app.now() - interval '1 minute' then
    update app.sessions set last_seen_at = app.now() where id = s.id;
  end if;
  return jsonb_build_object('userId', s.user_id, 'sessionId', s.id, 'mfa', s.mfa_at is not null);
end $$;

revoke execute on function app.sign_in_lookup, app.session_open, app.session_pending_factor, app.session_complete,
  app.session_close, app.session_holder from public;
grant execute on function app.sign_in_lookup, app.session_open, app.session_pending_factor, app.session_complete,
  app.session_close, app.session_holder to api;
