-- Authentication and organization selection, in the same round trip as the
-- operation they guard (see app.handle).

-- The organizations a user may select: enabled memberships only.
create or replace function app.selectable_organizations(for_user uuid) returns jsonb
language plpgsql stable security definer set search_path = pg_catalog, app as $$
begin
  return (select coalesce(jsonb_agg(jsonb_build_object('slug', o.slug, 'name', o.name) order by o.slug), '[]')
            from app.memberships m join app.organizations o on o.id = m.organization_id
           where m.user_id = for_user and not m.disabled);
end $$;

-- request: {"keyHash": hex sha256 or null, "orgSlug": text or null, "source": address,
--           "buckets": [{"name", "perMinute", "burst"}], "authFailures": {"perMinute", "burst"},
--           "read": true for GET and HEAD, "rateScale": RATE_LIMIT_SCALE}
--
-- Returns {"ok": true, "userId"} after setting the caller in transaction-local
-- settings, or {"error": {...}} (with "userId" once the key is known). Refusals are
-- returned rather than raised so the tokens they spend are kept.
--
-- SECURITY DEFINER: this is the caller-less path. Before it runs there is no caller,
-- so no policy could admit the key lookup; it reads only what authentication needs.
create or replace function app.authenticate(request jsonb) returns jsonb
language plpgsql security definer set search_path = pg_catalog, app as $$
declare
  key app.api_keys;
  wait integer;
  refused text;
  wanted_slug text := nullif(lower(btrim(request->>'orgSlug')), '');
  -- The app's session requests select their organization by id (?orgId=).
  wanted_id uuid := app.as_uuid(request->>'orgId');
  by_session boolean := request->>'sessionHash' is not null;
  session jsonb;
  selectable jsonb;
  chosen record;
  at timestamptz := app.now();
begin
  if request->>'keyHash' is null and not by_session then
    return jsonb_build_object('error', jsonb_build_object('code', 'UNAUTHORIZED', 'status', 401,
      'message', 'Send the API key as Authorization: Bearer <API_KEY>.'));
  end if;

  -- An address out of failed attempts learns nothing more, not even whether a key is
  -- valid. A plain read: take_tokens decides exactly when a failure is charged.
  select app.bucket_wait(app.bucket_level(r.tokens, r.refreshed_at, at, f.per_minute, f.burst), f.per_minute)
    into wait
    from app.rate_buckets r,
         (select (request->'authFailures'->>'perMinute')::double precision as per_minute,
                 (request->'authFailures'->>'burst')::double precision as burst) f
   where r.bucket = 'authfail:' || coalesce(request->>'source', '');
  if wait > 0 then
    return jsonb_build_object('error', jsonb_build_object('code', 'RATE_LIMITED', 'status', 429,
      'message', 'Too many failed authentication attempts from this address.', 'retryAfter', wait,
      'budget', 'authFailures'));
  end if;

  if by_session then
    -- A person signed in to the app: the session stands where a key would.
    session := app.session_holder(request->>'sessionHash');
    key.user_id := (session->>'userId')::uuid;
  else
    select k.* into key from app.api_keys k
     where k.key_hash = decode(request->>'keyHash', 'hex')
       and k.revoked_at is null and (k.expires_at is null or k.expires_at > at);
  end if;

  if key.user_id is null then
    wait := app.take_tokens(app.failed_authentication_bucket(request));
    if wait > 0 then
      return jsonb_build_object('error', jsonb_build_object('code', 'RATE_LIMITED', 'status', 429,
        'message', 'Too many failed authentication attempts from this address.', 'retryAfter', wait,
        'budget', 'authFailures'));
    end if;
    return jsonb_build_object('error', jsonb_build_object('code', 'UNAUTHORIZED', 'status', 401,
      'message', case when by_session then 'Sign in first: the session is missing, expired or ended.'
                      else 'The API key is missing, invalid, expired or revoked.' end));
  end if;

  -- A holder already over budget is refused before any work (the exact charge comes
  -- after the operation, in app.handle).
  -- The longest wait names the budget refusing.
  select app.bucket_wait(app.bucket_level(r.tokens, r.refreshed_at, at, (b->>'perMinute')::double precision,
                                          (b->>'burst')::double precision),
                         (b->>'perMinute')::double precision), b->>'name'
    into wait, refused
    from jsonb_array_elements(coalesce(request->'buckets', '[]')) b
    join app.rate_buckets r on r.bucket = 'user:' || key.user_id || ':' || (b->>'name')
   order by 1 desc limit 1;
  if wait > 0 then
    return app.rate_limited(wait, refused);
  end if;

  -- A write per request would make the key row hot; minute precision is enough.
  if key.id is not null and (key.last_used_at is null or key.last_used_at < at - interval '1 minute') then
    update app.api_keys set last_used_at = at where id = key.id;
  end if;

  selectable := app.selectable_organizations(key.user_id);

  if by_session and wanted_id is not null then
    select o.id, o.slug, m.role, m.disabled, o.require_mfa into chosen
      from app.organizations o
      join app.memberships m on m.organization_id = o.id and m.user_id = key.user_id
     where o.id = wanted_id;
    if chosen.id is null or chosen.disabled then
      return jsonb_build_object('userId', key.user_id, 'error', jsonb_build_object('code', 'ORG_FORBIDDEN', 'status', 403,
        'message', 'You are not an active member of that organization.',
        'data', jsonb_build_object('organizations', selectable)));
    end if;
  elsif by_session then
    -- The app without an organization named: the person's first active one by name.
    select o.id, o.slug, m.role, m.disabled, o.require_mfa into chosen
      from app.memberships m join app.organizations o on o.id = m.organization_id
     where m.user_id = key.user_id and not m.disabled
     order by lower(o.name), o.id limit 1;
    if chosen.id is null then
      return jsonb_build_object('userId', key.user_id, 'error', jsonb_build_object('code', 'ORG_FORBIDDEN', 'status', 403,
        'message', 'You have no active organization membership.',
        'data', jsonb_build_object('organizations', selectable)));
    end if;
  elsif wanted_slug is null then
    if jsonb_array_length(selectable) > 1 then
      return jsonb_build_object('userId', key.user_id, 'error', jsonb_build_object('code', 'ORG_SLUG_REQUIRED', 'status', 400,
        'message', 'This key''s user belongs to several organizations; send X-Organization-Slug.',
        'data', jsonb_build_object('organizations', selectable)));
    end if;
    select o.id, o.slug, m.role, m.disabled, o.require_mfa into chosen
      from app.memberships m join app.organizations o on o.id = m.organization_id
     where m.user_id = key.user_id and not m.disabled;
    if chosen.id is null then
      return jsonb_build_object('userId', key.user_id, 'error', jsonb_build_object('code', 'ORG_FORBIDDEN', 'status', 403,
        'message', 'This key''s user has no active organization membership.',
        'data', jsonb_build_object('organizations', selectable)));
    end if;
  else
    select o.id, o.slug, m.role, m.disabled, o.require_mfa into chosen
      from app.organizations o
      left join app.memberships m on m.organization_id = o.id and m.user_id = key.user_id
     where lower(o.slug) = wanted_slug;
    if chosen.id is null then
      return jsonb_build_object('userId', key.user_id, 'error', jsonb_build_object('code', 'ORG_SLUG_INVALID', 'status', 404,
        'message', 'No organization has that slug.',
        'data', jsonb_build_object('organizations', selectable)));
    end if;
    if chosen.role is null or chosen.disabled then
      return jsonb_build_object('userId', key.user_id, 'error', jsonb_build_object('code', 'ORG_FORBIDDEN', 'status', 403,
        'message', 'This key''s user is not an active member of that organization.',
        'data', jsonb_build_object('organizations', selectable)));
    end if;
  end if;

  -- An organization that requires a second factor admits only sessions that proved one.
  if by_session and chosen.require_mfa and not (session->>'mfa')::boolean
     and not coalesce((request->>'mfaExempt')::boolean, false) then
    return jsonb_build_object('userId', key.user_id, 'error', jsonb_build_object('code', 'MFA_REQUIRED', 'status', 403,
      'message', 'This organization requires a second factor: set one up under Settings > Security and sign in again.',
      'data', jsonb_build_object('organizationId', chosen.id)));
  end if;

  perform set_config('app.user_id', key.user_id::text, true),
          set_config('app.org_id', chosen.id::text, true),
          set_config('app.role', chosen.role, true),
          set_config('app.key_id', coalesce(key.id::text, ''), true),
          set_config('app.session_id', coalesce(session->>'sessionId', ''), true),
          set_config('app.rate_scale', coalesce(request->>'rateScale', '1'), true);
  return jsonb_build_object('ok', true, 'userId', key.user_id, 'organizationId', chosen.id);
end $$;

create or replace function app.failed_authentication_bucket(request jsonb) returns jsonb language sql immutable as $$
  select jsonb_build_array(jsonb_build_object(
    'key', 'authfail:' || coalesce(request->>'source', ''),
    'perMinute', request->'authFailures'->'perMinute', 'burst', request->'authFailures'->'burst'))
$$;

-- The request's buckets for a key holder (every key of one user shares them).
create or replace function app.key_holder_buckets(holder uuid, request jsonb) returns jsonb language plpgsql immutable as $$
begin
  return (select coalesce(jsonb_agg(jsonb_build_object('key', 'user:' || holder || ':' || (b->>'name'),
                                                       'perMinute', b->'perMinute', 'burst', b->'burst')), '[]')
            from jsonb_array_elements(coalesce(request->'buckets', '[]')) b);
end $$;

-- Takes one token from each of the request's buckets for a key holder (every key of
-- one user shares them). Returns 0, or the whole seconds to wait.
create or replace function app.charge_key_holder(holder uuid, request jsonb) returns integer language plpgsql as $$
begin
  -- A check ahead of the operation (before the server calls the object store)
  -- authenticates and peeks at the budgets; the operation itself pays.
  if not coalesce((request->>'charge')::boolean, true) then
    return 0;
  end if;
  return app.take_tokens(app.key_holder_buckets(holder, request));
end $$;

-- budget: the one refusing (app.refused_budget), for the server's metrics; never sent.
drop function if exists app.rate_limited(integer);
create or replace function app.rate_limited(wait integer, budget text) returns jsonb language sql immutable as $$
  select jsonb_build_object('error', jsonb_build_object('code', 'RATE_LIMITED', 'status', 429,
    'message', 'Rate limit reached; retry after the indicated number of seconds.', 'retryAfter', wait, 'budget', budget))
$$;

-- One request, one statement: authenticate, run the operation under the caller's
-- row-level security, then charge the caller's budgets. Runs as the request role.
--
-- Budgets are charged after the operation, just before commit, so the bucket row
-- every request of one user shares stays locked only for the commit, not for the
-- whole operation. An operation over budget is rolled back with its subtransaction,
-- so a refused request has no effect and costs nothing. A domain refusal (SQLSTATE
-- TL000) is caught here and still charged; any other error aborts the statement.
--
-- Reads commit asynchronously: all they write is budget and key-usage bookkeeping,
-- whose loss in a crash harms nothing, and waiting for a WAL flush would dominate
-- their latency.
create or replace function app.handle(request jsonb, operation text, args jsonb) returns jsonb
language plpgsql as $$
declare
  outcome jsonb := app.authenticate(request);
  holder uuid := (outcome->>'userId')::uuid;
  result jsonb;
  refusal jsonb;
  wait integer;
begin
  if coalesce((request->>'read')::boolean, false) then
    perform set_config('synchronous_commit', 'off', true);
  end if;
  if outcome ? 'error' or operation is null then
    if holder is not null then
      wait := app.charge_key_holder(holder, request);
      if wait > 0 then
        return app.rate_limited(wait, app.refused_budget());
      end if;
    end if;
    return outcome;
  end if;

  begin
    execute format('select api.%I($1)', operation) into result using args;
    wait := app.charge_key_holder(holder, request);
    if wait > 0 then
      -- Rolling the operation back forgets the refused bucket: its budget rides along.
      raise exception using errcode = 'TL429', message = wait::text, detail = app.refused_budget();
    end if;
    return jsonb_build_object('ok', true, 'body', result);
  exception
    when sqlstate 'TL429' then
      declare
        budget text;
      begin
        get stacked diagnostics budget = pg_exception_detail;
        return app.rate_limited(sqlerrm::integer, budget);
      end;
    when sqlstate 'TL000' then
      declare
        detail text;
      begin
        get stacked diagnostics detail = pg_exception_detail;
        refusal := jsonb_build_object('error', detail::jsonb || jsonb_build_object('message', sqlerrm));
      end;
  end;
  wait := app.charge_key_holder(holder, request);
  if wait > 0 then
    return app.rate_limited(wait, app.refused_budget());
  end if;
  return refusal;
end $$;

-- app.handle is the request's one statement; the rest are its steps. The
-- organizations a user may select are read only through app.authenticate.
grant execute on function app.handle, app.authenticate, app.failed_authentication_bucket, app.key_holder_buckets,
  app.charge_key_holder, app.rate_limited to api;
