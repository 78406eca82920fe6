-- Token buckets. Each bucket refills continuously at per_minute tokens a minute up
-- to its burst. A request takes one token from every bucket it names, or from none:
-- the narrowest bucket governs and a refused request costs nothing.
--
-- SECURITY DEFINER: app.rate_buckets is shared by every caller (and by callers not
-- yet authenticated), so the request role has no access to it of its own.

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
         set tokens = least(spec.burst, r.tokens + greatest(0, extract(epoch from at - r.refreshed_at)) * spec.per_minute / 60)
                      - case when least(spec.burst, r.tokens + greatest(0, extract(epoch from at - r.refreshed_at)) * spec.per_minute / 60) >= 1
                             then 1 else 0 end,
             granted = least(spec.burst, r.tokens + greatest(0, extract(epoch from at - r.refreshed_at)) * spec.per_minute / 60) >= 1,
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
      return greatest(1, ceil((1 - left_over) * 60 / spec.per_minute))::integer;
    end if;
    taken := taken || spec.key;
  end loop;
  return 0;
end $$;

drop function if exists app.peek_tokens(jsonb);

-- Buckets untouched for an hour are full again; forgetting them changes nothing.
create or replace function app.forget_idle_rate_buckets() returns integer
language sql security definer set search_path = pg_catalog, app as $$
  with gone as (
    delete from app.rate_buckets where refreshed_at < app.now() - interval '1 hour' returning 1
  ) select count(*)::integer from gone
$$;
