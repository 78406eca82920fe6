-- Token buckets. Each bucket refills continuously at per_minute tokens a minute up
-- to its burst. A request takes one token from every bucket it names, or from none:
-- the narrowest bucket governs and a refused request costs nothing.
--
-- SECURITY DEFINER: app.rate_buckets is shared by every caller (and by callers not
-- yet authenticated), so the request role has no access to it of its own.

-- buckets: [{"key": "...", "perMinute": 120, "burst": 200}, ...]
-- Returns 0 when taken, else the whole seconds to wait before a token is available.
create or replace function app.take_tokens(buckets jsonb) returns integer
language plpgsql security definer set search_path = pg_catalog, app as $$
declare
  spec record;
  available double precision;
  wait_seconds double precision := 0;
  at timestamptz := app.now();
  refills jsonb := '{}';
begin
  -- Lock in key order so concurrent requests naming the same buckets never deadlock.
  for spec in
    select b->>'key' as key, (b->>'perMinute')::double precision as per_minute,
           (b->>'burst')::double precision as burst
    from jsonb_array_elements(buckets) b order by b->>'key'
  loop
    insert into app.rate_buckets (bucket, tokens, refreshed_at)
    values (spec.key, spec.burst, at) on conflict (bucket) do nothing;

    select least(spec.burst, r.tokens + greatest(0, extract(epoch from at - r.refreshed_at)) * spec.per_minute / 60)
      into available
    from app.rate_buckets r where r.bucket = spec.key for update;

    if available < 1 then
      wait_seconds := greatest(wait_seconds, (1 - available) * 60 / spec.per_minute);
    end if;
    refills := refills || jsonb_build_object(spec.key, available);
  end loop;

  if wait_seconds > 0 then
    return greatest(1, ceil(wait_seconds))::integer;
  end if;

  update app.rate_buckets r
     set tokens = (refills->>r.bucket)::double precision - 1, refreshed_at = at
   where r.bucket in (select jsonb_object_keys(refills));
  return 0;
end $$;

-- Buckets untouched for an hour are full again; forgetting them changes nothing.
create or replace function app.forget_idle_rate_buckets() returns integer
language sql security definer set search_path = pg_catalog, app as $$
  with gone as (
    delete from app.rate_buckets where refreshed_at < app.now() - interval '1 hour' returning 1
  ) select count(*)::integer from gone
$$;
