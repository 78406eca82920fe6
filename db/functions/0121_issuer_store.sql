-- What the identity issuer keeps (server/oidc): oidc-provider's models through its
-- adapter, and the RS256 keys ID tokens are signed with.

-- oidc-provider's adapter, one door for all its operations (server/oidc/adapter.ts):
--   upsert(model, id, payload, expires_in)  find(model, id)  find_by_uid(model, uid)
--   consume(model, id)  destroy(model, id)  revoke_grant(grant id)
-- Expiry is reckoned on app.now(): a payload past its expiry is not found, whatever
-- oidc-provider's own clock says, so a pinned clock expires codes and tokens in tests.
-- A consumed payload comes back with `consumed` (epoch seconds), which is how
-- oidc-provider refuses a code the second time.
-- SECURITY DEFINER: the caller-less path. Codes and tokens are presented by clients,
-- not by a signed-in caller, and no policy could admit a lookup by id alone; the
-- request role reads and writes the table through this door only.
create or replace function app.issuer_store(operation text, model text, key text, payload jsonb default null,
  expires_in integer default null) returns jsonb
language plpgsql security definer set search_path = pg_catalog, app as $$
declare
  found jsonb;
begin
  case operation
    when 'upsert' then
      insert into app.issuer_payloads (model, id, payload, grant_id, uid, expires_at)
      values (model, key, payload, payload->>'grantId', payload->>'uid',
              app.now() + expires_in * interval '1 second')
      on conflict on constraint issuer_payloads_pkey do update
        set payload = excluded.payload, grant_id = excluded.grant_id, uid = excluded.uid, expires_at = excluded.expires_at;
      -- The issuer's own writes keep the table short: a few expired rows go each time,
      -- so no sweeper is needed.
      delete from app.issuer_payloads p
       where (p.model, p.id) in (select e.model, e.id from app.issuer_payloads e
                                  where e.expires_at < app.now() - interval '1 hour' limit 20);
      return null;
    when 'find', 'find_by_uid' then
      select p.payload || case when p.consumed_at is null then '{}'::jsonb
                               else jsonb_build_object('consumed', floor(extract(epoch from p.consumed_at))::bigint) end
        into found
        from app.issuer_payloads p
       where p.model = issuer_store.model
         and (case when operation = 'find' then p.id = key else p.uid = key end)
         and (p.expires_at is null or p.expires_at > app.now());
      return found;
    when 'consume' then
      update app.issuer_payloads p set consumed_at = app.now()
       where p.model = issuer_store.model and p.id = key and p.consumed_at is null;
      return null;
    when 'destroy' then
      delete from app.issuer_payloads p where p.model = issuer_store.model and p.id = key;
      return null;
    when 'revoke_grant' then
      delete from app.issuer_payloads p where p.grant_id = key;
      return null;
    else
      raise exception 'unknown issuer store operation %', operation;
  end case;
end $$;

-- The signing keys the issuer publishes (private JWKs): the active key first, which
-- signs, then keys retired within issuer.retiredKeyPublishedSeconds, which only
-- verify. On first use there is no key: the issuer offers one it made (candidate),
-- stored unless another process stored its own first.
-- SECURITY DEFINER: the private keys are readable through this door only, never by
-- a query of the request role.
create or replace function app.issuer_keys(candidate jsonb default null) returns jsonb
language plpgsql security definer set search_path = pg_catalog, app as $$
begin
  if candidate is not null then
    insert into app.issuer_signing_keys (kid, jwk)
    select candidate->>'kid', candidate
     where not exists (select 1 from app.issuer_signing_keys where retired_at is null)
    on conflict do nothing;
  end if;
  return coalesce((
    select jsonb_agg(k.jwk order by k.retired_at desc nulls first, k.created_at desc)
      from app.issuer_signing_keys k
     where k.retired_at is null
        or k.retired_at > app.now() - app.limit('issuer.retiredKeyPublishedSeconds') * interval '1 second'), '[]');
end $$;

-- `admin oidc rotate-keys`: the new key signs from now on; the one it replaces is
-- retired but stays published for issuer.retiredKeyPublishedSeconds, so tokens it
-- signed still verify; keys retired longer ago are deleted. Owner only.
create or replace function app.operator_issuer_rotate_key(new_kid text, new_jwk jsonb) returns jsonb
language plpgsql as $$
declare
  retired jsonb;
  removed jsonb;
begin
  lock table app.issuer_signing_keys in share row exclusive mode;
  with done as (
    update app.issuer_signing_keys set retired_at = app.now() where retired_at is null returning kid
  ) select coalesce(jsonb_agg(kid), '[]') into retired from done;
  insert into app.issuer_signing_keys (kid, jwk) values (new_kid, new_jwk);
  with gone as (
    delete from app.issuer_signing_keys
     where retired_at <= app.now() - app.limit('issuer.retiredKeyPublishedSeconds') * interval '1 second'
    returning kid
  ) select coalesce(jsonb_agg(kid), '[]') into removed from gone;
  return jsonb_build_object('kid', new_kid, 'retired', retired, 'removed', removed);
end $$;

grant execute on function app.issuer_store, app.issuer_keys to api;
