-- Authentication and organization selection, in the same round trip as the
-- operation they guard (see app.handle).

-- The organizations a user may select: enabled memberships only.
create or replace function app.selectable_organizations(for_user uuid) returns jsonb
language sql stable security definer set search_path = pg_catalog, app as $$
  select coalesce(jsonb_agg(jsonb_build_object('slug', o.slug, 'name', o.name) order by o.slug), '[]')
  from app.memberships m join app.organizations o on o.id = m.organization_id
  where m.user_id = for_user and not m.disabled
$$;

-- request: {"keyHash": hex sha256 or null, "orgSlug": text or null, "source": address,
--           "buckets": [{"name", "perMinute", "burst"}], "authFailures": {"perMinute", "burst"}}
--
-- Returns {"ok": true} after setting the caller in transaction-local settings, or
-- {"error": {...}} for a refusal. Refusals are returned rather than raised so the
-- tokens they spend (failed authentication per source address) are kept.
--
-- SECURITY DEFINER: this is the caller-less path. Before it runs there is no caller,
-- so no policy could admit the key lookup; it reads only what authentication needs.
create or replace function app.authenticate(request jsonb) returns jsonb
language plpgsql security definer set search_path = pg_catalog, app as $$
declare
  key app.api_keys;
  wait integer;
  wanted_slug text := nullif(lower(btrim(request->>'orgSlug')), '');
  selectable jsonb;
  chosen record;
  at timestamptz := app.now();
begin
  if request->>'keyHash' is null then
    return jsonb_build_object('error', jsonb_build_object('code', 'UNAUTHORIZED', 'status', 401,
      'message', 'Send the API key as Authorization: Bearer <API_KEY>.'));
  end if;

  select k.* into key from app.api_keys k
   where k.key_hash = decode(request->>'keyHash', 'hex')
     and k.revoked_at is null and (k.expires_at is null or k.expires_at > at);

  if key.id is null then
    wait := app.take_tokens(jsonb_build_array(jsonb_build_object(
      'key', 'authfail:' || coalesce(request->>'source', ''),
      'perMinute', request->'authFailures'->'perMinute', 'burst', request->'authFailures'->'burst')));
    if wait > 0 then
      return jsonb_build_object('error', jsonb_build_object('code', 'RATE_LIMITED', 'status', 429,
        'message', 'Too many failed authentication attempts from this address.', 'retryAfter', wait));
    end if;
    return jsonb_build_object('error', jsonb_build_object('code', 'UNAUTHORIZED', 'status', 401,
      'message', 'The API key is missing, invalid, expired or revoked.'));
  end if;

  -- Every key of one user shares that user's budgets.
  wait := app.take_tokens((
    select coalesce(jsonb_agg(jsonb_build_object('key', 'user:' || key.user_id || ':' || (b->>'name'),
                                                 'perMinute', b->'perMinute', 'burst', b->'burst')), '[]')
    from jsonb_array_elements(coalesce(request->'buckets', '[]')) b));
  if wait > 0 then
    return jsonb_build_object('error', jsonb_build_object('code', 'RATE_LIMITED', 'status', 429,
      'message', 'Rate limit reached; retry after the indicated number of seconds.', 'retryAfter', wait));
  end if;

  -- A write per request would make the key row hot; minute precision is enough.
  if key.last_used_at is null or key.last_used_at < at - interval '1 minute' then
    update app.api_keys set last_used_at = at where id = key.id;
  end if;

  selectable := app.selectable_organizations(key.user_id);

  if wanted_slug is null then
    if jsonb_array_length(selectable) > 1 then
      return jsonb_build_object('error', jsonb_build_object('code', 'ORG_SLUG_REQUIRED', 'status', 400,
        'message', 'This key''s user belongs to several organizations; send X-Organization-Slug.',
        'data', jsonb_build_object('organizations', selectable)));
    end if;
    select o.id, o.slug, m.role, m.disabled into chosen
      from app.memberships m join app.organizations o on o.id = m.organization_id
     where m.user_id = key.user_id and not m.disabled;
    if chosen.id is null then
      return jsonb_build_object('error', jsonb_build_object('code', 'ORG_FORBIDDEN', 'status', 403,
        'message', 'This key''s user has no active organization membership.',
        'data', jsonb_build_object('organizations', selectable)));
    end if;
  else
    select o.id, o.slug, m.role, m.disabled into chosen
      from app.organizations o
      left join app.memberships m on m.organization_id = o.id and m.user_id = key.user_id
     where lower(o.slug) = wanted_slug;
    if chosen.id is null then
      return jsonb_build_object('error', jsonb_build_object('code', 'ORG_SLUG_INVALID', 'status', 404,
        'message', 'No organization has that slug.',
        'data', jsonb_build_object('organizations', selectable)));
    end if;
    if chosen.role is null or chosen.disabled then
      return jsonb_build_object('error', jsonb_build_object('code', 'ORG_FORBIDDEN', 'status', 403,
        'message', 'This key''s user is not an active member of that organization.',
        'data', jsonb_build_object('organizations', selectable)));
    end if;
  end if;

  perform set_config('app.user_id', key.user_id::text, true),
          set_config('app.org_id', chosen.id::text, true),
          set_config('app.role', chosen.role, true),
          set_config('app.key_id', key.id::text, true);
  return jsonb_build_object('ok', true);
end $$;

-- One request, one statement: authenticate, then run the operation under the
-- caller's row-level security. Runs as the request role (SECURITY INVOKER).
--
-- A domain refusal (SQLSTATE TL000) is caught here so the budget the request spent
-- stays spent; the refusal's own writes roll back with its subtransaction. Any other
-- error propagates and the whole statement rolls back.
create or replace function app.handle(request jsonb, operation text, args jsonb) returns jsonb
language plpgsql as $$
declare
  outcome jsonb := app.authenticate(request);
  result jsonb;
  refusal text;
begin
  if outcome ? 'error' then
    return outcome;
  end if;
  if operation is null then
    return outcome;
  end if;
  begin
    execute format('select api.%I($1)', operation) into result using args;
    return jsonb_build_object('ok', true, 'body', result);
  exception when sqlstate 'TL000' then
    get stacked diagnostics refusal = pg_exception_detail;
    return jsonb_build_object('error', refusal::jsonb || jsonb_build_object('message', sqlerrm));
  end;
end $$;
