-- Token buckets. Each bucket refills continuously at per_minute tokens a minute up
-- to its burst. A request takes one token from every bucket it names, or from none:
-- the narrowest bucket governs and a refused request costs nothing.
--
-- SECURITY DEFINER: app.rate_buckets is shared by every caller (and by callers not
-- yet authenticated), so the request role has no access to it of its own.

-- A bucket's tokens at an instant: what it held when last refreshed plus the refill
-- since, up to its burst. The one place the refill is written; plain SQL the planner
-- inlines wherever it is used.
create or replace function app.bucket_level(tokens double precision, refreshed_at timestamptz, at timestamptz,
  per_minute double precision, burst double precision) returns double precision language sql immutable as $$
  select least(burst, tokens + greatest(0, extract(epoch from at - refreshed_at)) * per_minute / 60)
$$;

-- Whole seconds until a bucket holding level tokens holds one (0 or less: it does).
create or replace function app.bucket_wait(level double precision, per_minute double precision) returns integer
language sql immutable as $$
  select ceil((1 - level) * 60 / per_minute)::integer
$$;

-- buckets: [{"key": "...", "perMinute": 120, "burst": 200}, ...]
-- Returns 0 when taken, else the whole seconds to wait before a token is available.
--
-- The common path is one UPDATE per bucket: it refills, takes a token when one is
-- there and reports whether it did, holding the row lock only until commit. A row
-- is inserted the first time a bucket is used; when a later bucket refuses, tokens
-- taken from earlier ones are put back.
create or replace function app.take_tokens(buckets jsonb) returns integer
language plpgsql security definer set search_path = pg_catalog, app as $$
declare
  spec record;
  at timestamptz := app.now();
  was_granted boolean;
  left_over double precision;
  taken text[] := '{}';
begin
  -- Key order, so concurrent requests naming the same buckets never deadlock.
  for spec in
    select b->>'key' as key, (b->>'perMinute')::double precision as per_minute,
           (b->>'burst')::double precision as burst
    from jsonb_array_elements(buckets) b order by b->>'key'
  loop
    loop
      -- Every expression reads the locked row itself (never a separate read of it),
      -- so a concurrent take re-evaluates against the version it waited for.
      update app.rate_buckets r
         set tokens = app.bucket_level(r.tokens, r.refreshed_at, at, spec.per_minute, spec.burst)
                      - case when app.bucket_level(r.tokens, r.refreshed_at, at, spec.per_minute, spec.burst) >= 1
                             then 1 else 0 end,
             granted = app.bucket_level(r.tokens, r.refreshed_at, at, spec.per_minute, spec.burst) >= 1,
             refreshed_at = greatest(r.refreshed_at, at)
       where r.bucket = spec.key
      returning r.granted, r.tokens into was_granted, left_over;
      exit when found;
      insert into app.rate_buckets (bucket, tokens, refreshed_at, granted)
      values (spec.key, spec.burst - 1, at, true) on conflict (bucket) do nothing;
      if found then
        was_granted := true;
        exit;
      end if;
    end loop;

    if not was_granted then
      if cardinality(taken) > 0 then
        update app.rate_buckets r set tokens = r.tokens + 1 where r.bucket = any (taken);
      end if;
      -- Which bucket refused, for the 429's budget (app.refused_budget): a side output
      -- rather than a second return value, so every caller keeps reading one integer.
      perform set_config('app.refused_bucket', spec.key, true);
      return greatest(1, app.bucket_wait(left_over, spec.per_minute));
    end if;
    taken := taken || spec.key;
  end loop;
  return 0;
end $$;

drop function if exists app.peek_tokens(jsonb);

-- The budget a bucket belongs to, by its key ('user:<id>:<budget>', 'authfail:<address>',
-- 'webhook-sender:<address>', 'webhook-trigger:<id>', 'signin-...'): what a 429 names to
-- the server's metrics, which must never hold an address or an id.
create or replace function app.budget_of(bucket text) returns text language sql immutable as $$
  select case
    when bucket like 'user:%' then split_part(bucket, ':', 3)
    when bucket like 'authfail:%' then 'authFailures'
    when bucket like 'webhook-sender:%' then 'webhookSender'
    when bucket like 'webhook-trigger:%' then 'webhookTrigger'
    when bucket like 'signin-address:%' then 'signInAddress'
    when bucket like 'signin-account:%' then 'signInAccount'
    else 'unknown'
  end
$$;

-- The budget of the bucket app.take_tokens last refused in this transaction.
create or replace function app.refused_budget() returns text language sql stable as $$
  select app.budget_of(coalesce(current_setting('app.refused_bucket', true), ''))
$$;

-- Buckets untouched for an hour are full again; forgetting them changes nothing.
create or replace function app.forget_idle_rate_buckets() returns integer
language sql security definer set search_path = pg_catalog, app as $$
  with gone as (
    delete from app.rate_buckets where refreshed_at < app.now() - interval '1 hour' returning 1
  ) select count(*)::integer from gone
$$;

-- A budget of db/limits.json (rate.<budget>.perMinute and .burst) as the caller's
-- own bucket, scaled by RATE_LIMIT_SCALE like the budgets the server names.
create or replace function app.user_bucket(budget text) returns jsonb language plpgsql stable as $$
begin
  return jsonb_build_object('key', 'user:' || app.user_id() || ':' || budget,
    'perMinute', app.limit('rate.' || budget || '.perMinute') * app.rate_scale(),
    'burst', app.limit('rate.' || budget || '.burst') * app.rate_scale());
end $$;

-- Takes a token of one of the caller's operation budgets (retry-indexing, cascading
-- deletes), or refuses the operation with 429 RATE_LIMITED.
create or replace function app.spend_user_budget(budget text, refusal text) returns void language plpgsql as $$
declare
  wait integer := app.take_tokens(jsonb_build_array(app.user_bucket(budget)));
begin
  if wait > 0 then
    perform app.fail('RATE_LIMITED', 429, refusal, jsonb_build_object('retryAfter', wait, 'budget', budget));
  end if;
end $$;

-- app.forget_idle_rate_buckets is the worker's.
grant execute on function app.bucket_level, app.bucket_wait, app.take_tokens, app.budget_of, app.refused_budget,
  app.user_bucket, app.spend_user_budget to api;
