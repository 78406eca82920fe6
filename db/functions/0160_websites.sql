-- Websites (docs/websites.md): the public API's operations (api.website_*), the scan
-- schedule, and what the crawl job (jobs/tasks/crawl-website.ts, on the owner
-- connection) writes: a scan's start and end and each page it visits. A page whose
-- readable text changed is queued for the indexing pipeline like a document.

-- A website's address as given ('example.com', 'https://Example.com:8443/',
-- 'http://127.0.0.1:8080'): its domain (host, and port when not the scheme's
-- default, lower-case) and the origin a scan starts from (https unless http:// was
-- given). Null when it is not a site address (a path, a query, a user name, ...).
create or replace function app.website_address(address text) returns jsonb language plpgsql immutable as $$
declare
  m text[] := regexp_match(lower(btrim(address)),
    '^(?:(https?)://)?([a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?)*|\[[0-9a-f:.]+\])(?::([0-9]{1,5}))?/?$');
  scheme text;
  port integer;
  domain text;
begin
  if m is null or length(m[2]) > 253 then
    return null;
  end if;
  -- An address that looks like an IP address must be one: 999.1.1.1 is no host.
  if m[2] ~ '^[0-9.]+$' and (m[2] !~ '^\d{1,3}(\.\d{1,3}){3}$'
                             or exists (select 1 from unnest(string_to_array(m[2], '.')) o where o::integer > 255)) then
    return null;
  end if;
  if m[2] ~ '^\[' then
    begin
      perform btrim(m[2], '[]')::inet;
    exception when invalid_text_representation then
      return null;
    end;
    if family(btrim(m[2], '[]')::inet) <> 6 then
      return null;
    end if;
  end if;
  scheme := coalesce(m[1], 'https');
  port := m[3]::integer;
  if port is not null and (port < 1 or port > 65535) then
    return null;
  end if;
  domain := m[2] || case when port is null or (scheme = 'https' and port = 443) or (scheme = 'http' and port = 80)
                         then '' else ':' || port end;
  return jsonb_build_object('domain', domain, 'origin', scheme || '://' || domain);
end $$;

create or replace function app.website_json(w app.websites) returns jsonb language sql stable as $$
  select jsonb_build_object(
    'id', w.id, 'domain', w.domain, 'url', w.origin, 'scanInterval', w.scan_interval, 'status', w.status,
    'lastError', w.last_error, 'lastScanStartedAt', app.ms(w.last_scan_started_at),
    'lastScanFinishedAt', app.ms(w.last_scan_finished_at), 'nextScanAt', app.ms(w.next_scan_at),
    'lastScan', w.last_scan, 'createdAt', app.ms(w.created_at), 'updatedAt', app.ms(w.updated_at))
$$;

create or replace function app.website(website text) returns app.websites language plpgsql stable as $$
declare
  w app.websites;
begin
  select * into w from app.websites where organization_id = app.org_id() and id = app.as_uuid(website);
  if w.id is null then
    perform app.fail('WEBSITE_NOT_FOUND', 404, 'Website not found.');
  end if;
  return w;
end $$;

-- The website's scan job: one per website (its job key), run one at a time (its
-- queue), so a sync asked for during a scan runs after it. A request schedules only
-- its own organization's websites.
create or replace function app.website_schedule(website uuid, run_after interval) returns void
language plpgsql security definer set search_path = pg_catalog, app as $$
declare
  owner uuid := (select w.organization_id from app.websites w where w.id = website);
begin
  if app.org_id() is not null and owner is distinct from app.org_id() then
    raise exception 'website_schedule: website % is not the caller''s', website;
  end if;
  -- A website's scans always share one of four queues (by its id), so one website is
  -- never scanned twice at once, and scans take at most four of the workers' slots.
  perform app.add_job('crawl_website', json_build_object('websiteId', website),
    queue_name => 'website-scans-' || abs(hashtext(website::text)) % 4, job_key => 'website-scan:' || website,
    run_at => now() + coalesce(run_after, interval '0'), max_attempts => 3);
end $$;
revoke execute on function app.website_schedule(uuid, interval) from public;
grant execute on function app.website_schedule(uuid, interval) to api;

-- Removes a deleted website's pending scan (a running one finds the website gone).
create or replace function app.website_unschedule(website uuid) returns void
language plpgsql security definer set search_path = pg_catalog, app as $$
begin
  if exists (select 1 from app.websites w where w.id = website) then
    raise exception 'website_unschedule: website % still exists', website;
  end if;
  perform graphile_worker.remove_job('website-scan:' || website);
end $$;
revoke execute on function app.website_unschedule(uuid) from public;
grant execute on function app.website_unschedule(uuid) to api;

-- Adds a website, or changes the interval of the one its domain names (the natural
-- key): created tells which. A new website is scanned at once. organization is the
-- caller's (the public API) or null (the crawler service's own).
create or replace function app.website_upsert(organization uuid, address text, scan_interval integer, creator uuid,
  out website app.websites, out created boolean) language plpgsql as $$
declare
  parsed jsonb := app.website_address(address);
begin
  if parsed is null then
    perform app.invalid_body('domain', 'must be a host name or IP address, with an optional http:// or https:// and port, and no path');
  end if;
  select * into website from app.websites w
   where coalesce(w.organization_id, app.nil_owner()) = coalesce(organization, app.nil_owner())
     and w.domain = parsed->>'domain'
     for update;
  created := website.id is null;
  if created then
    insert into app.websites (organization_id, domain, origin, scan_interval, created_by, next_scan_at)
    values (organization, parsed->>'domain', parsed->>'origin', website_upsert.scan_interval, creator, app.now())
    returning * into website;
    perform app.website_schedule(website.id, null);
  elsif website.scan_interval <> website_upsert.scan_interval then
    update app.websites w
       set scan_interval = website_upsert.scan_interval, updated_at = app.now(),
           next_scan_at = case when w.status = 'idle' or w.status = 'failed'
                               then coalesce(w.last_scan_finished_at, app.now()) + make_interval(secs => website_upsert.scan_interval)
                               else w.next_scan_at end
     where w.id = website.id
    returning * into website;
    if website.status in ('idle', 'failed') then
      perform app.website_schedule(website.id, greatest(website.next_scan_at - app.now(), interval '0'));
    end if;
  end if;
end $$;

-- ---------------------------------------------------------------------------
-- The public API

create or replace function app.website_writer() returns void language plpgsql stable as $$
begin
  if not app.has_editing_role() then
    perform app.fail('ROLE_FORBIDDEN', 403, 'Changing the organization''s websites needs the Editor role or above.');
  end if;
end $$;

create or replace function api.websites_list(args jsonb) returns jsonb language plpgsql stable as $$
declare
  page_size integer := app.page_size(args->>'limit', 'page.websites.maxSize');
  filters jsonb := '{}';
  page_start record := app.keyset_resume(args->>'cursor', 'websites', filters);
  rows jsonb;
  positions jsonb[];
begin
  select jsonb_agg(app.website_json(w) order by w.created_at desc, w.id desc),
         array_agg(app.keyset_position(w.created_at, w.id) order by w.created_at desc, w.id desc)
    into rows, positions
    from (select * from app.websites w
           where w.organization_id = app.org_id()
             and (w.created_at, w.id) < (page_start.after_created, page_start.after_id)
           order by w.created_at desc, w.id desc
           limit page_size + 1) w;
  return app.keyset_page('page', 'websites', filters, page_size, rows, positions) - 'cursor';
end $$;

create or replace function api.website_create(args jsonb) returns jsonb language plpgsql as $$
declare
  result record;
begin
  perform app.website_writer();
  result := app.website_upsert(app.org_id(), args->>'domain', (args->>'scanInterval')::integer, app.user_id());
  perform app.audit(case when result.created then 'website.created' else 'website.updated' end, 'website',
                    (result.website).id::text, jsonb_build_object('domain', (result.website).domain));
  return jsonb_build_object('website', app.website_json(result.website), 'created', result.created);
end $$;

create or replace function api.website_get(args jsonb) returns jsonb language plpgsql stable as $$
begin
  return jsonb_build_object('website', app.website_json(app.website(args->>'id')));
end $$;

create or replace function api.website_update(args jsonb) returns jsonb language plpgsql as $$
declare
  w app.websites := app.website(args->>'id');
  result record;
begin
  perform app.website_writer();
  result := app.website_upsert(app.org_id(), w.domain, (args->>'scanInterval')::integer, app.user_id());
  perform app.audit('website.updated', 'website', w.id::text, jsonb_build_object('scanInterval', args->'scanInterval'));
  return jsonb_build_object('website', app.website_json(result.website));
end $$;

-- Its pages and their passages go with it (by foreign key); a pending scan is removed.
create or replace function api.website_delete(args jsonb) returns jsonb language plpgsql as $$
declare
  w app.websites := app.website(args->>'id');
begin
  perform app.website_writer();
  delete from app.websites where id = w.id;
  perform app.website_unschedule(w.id);
  perform app.audit('website.deleted', 'website', w.id::text, jsonb_build_object('domain', w.domain));
  return null;
end $$;

-- A scan now: the scheduled one is replaced; during a scan, another follows it.
create or replace function api.website_sync(args jsonb) returns jsonb language plpgsql as $$
declare
  w app.websites := app.website(args->>'id');
begin
  perform app.website_writer();
  update app.websites set status = case when status = 'scanning' then status else 'queued' end,
                          next_scan_at = app.now(), updated_at = app.now()
   where id = w.id
  returning * into w;
  perform app.website_schedule(w.id, null);
  return jsonb_build_object('website', app.website_json(w));
end $$;

create or replace function app.website_page_json(p app.website_pages, indexing text) returns jsonb language sql stable as $$
  select jsonb_build_object(
    'id', p.id, 'url', p.url, 'status', p.status, 'skipReason', p.skip_reason, 'detail', p.detail,
    'httpStatus', p.http_status, 'title', p.title, 'language', p.language, 'wordCount', p.word_count,
    'indexing', case indexing when 'completed' then 'indexed' when 'failed' then 'failed'
                              when 'queued' then 'indexing' when 'running' then 'indexing' end,
    'firstSeenAt', app.ms(p.first_seen_at), 'fetchedAt', app.ms(p.fetched_at), 'changedAt', app.ms(p.changed_at))
$$;

-- The offset family (SPEC.md "List families"): by URL; offset or a signed cursor
-- that carries the next offset, never both.
create or replace function api.website_pages(args jsonb) returns jsonb language plpgsql stable as $$
declare
  w app.websites := app.website(args->>'id');
  page_size integer := app.page_size(args->>'limit', 'page.websitePages.maxSize');
  filters jsonb := jsonb_strip_nulls(jsonb_build_object('websiteId', w.id, 'status', args->>'status'));
  start_at bigint;
  total bigint;
  rows jsonb;
  next_cursor text := '';
begin
  if args ? 'cursor' and args ? 'offset' then
    perform app.fail('INVALID_QUERY', 400, 'Send cursor or offset, never both.',
      jsonb_build_object('issues', jsonb_build_array(jsonb_build_object('path', 'offset', 'message', 'cannot be sent with cursor'))));
  end if;
  -- An offset past any website's pages is an empty page, never an overflow.
  start_at := coalesce((app.cursor_read(args->>'cursor', 'website_pages', filters))::bigint,
                       case when args ? 'offset' then least((args->>'offset')::numeric, 1000000000)::bigint end, 0);
  select count(*) into total from app.website_pages p
   where p.website_id = w.id and (args->>'status' is null or p.status = args->>'status');
  select jsonb_agg(app.website_page_json(x, f.status) order by x.url) into rows
    from (select * from app.website_pages p
           where p.website_id = w.id and (args->>'status' is null or p.status = args->>'status')
           order by p.url
           offset start_at limit page_size) x
    left join app.index_files f on f.website_page_id = x.id;
  if start_at + page_size < total then
    next_cursor := app.cursor_issue('website_pages', filters, to_jsonb(start_at + page_size));
  end if;
  return jsonb_build_object('pages', coalesce(rows, '[]'), 'total', total, 'offset', start_at,
    'hasMore', next_cursor <> '', 'isDone', next_cursor = '', 'continueCursor', next_cursor);
end $$;

-- Ranked passages of the website's indexed pages (app.search_chunks under the
-- caller's policies), with the query's vector when the server computed one.
create or replace function api.website_search(args jsonb) returns jsonb language plpgsql stable as $$
declare
  w app.websites := app.website(args->>'id');
  lang regconfig := app.search_language(coalesce(args->>'language', 'english'));
  query_embedding real[] := case when jsonb_typeof(args->'observed'->'queryEmbedding') = 'array'
                                 then array(select jsonb_array_elements_text(args->'observed'->'queryEmbedding')::real) end;
  files text[] := array(select 'page:' || p.id from app.website_pages p where p.website_id = w.id and p.status = 'indexed');
begin
  if lang is null then
    perform app.invalid_body('language', 'must name a text search configuration of PostgreSQL (english, german, simple, ...)');
  end if;
  return jsonb_build_object('results', coalesce((
    select jsonb_agg(jsonb_build_object('score', round(s.score::numeric, 6), 'content', s.content, 'heading', s.heading,
                                        'page', jsonb_build_object('id', p.id, 'url', p.url, 'title', p.title))
                     order by s.score desc, s.file_id, s.ordinal)
      from app.search_chunks(args->>'query', files, coalesce((args->>'topK')::integer, 8),
                             (args->>'similarityThreshold')::double precision, query_embedding, lang, w.organization_id) s
      join app.website_pages p on 'page:' || p.id = s.file_id), '[]'));
end $$;

grant execute on function app.website_address, app.website_json, app.website, app.website_upsert, app.website_writer,
  api.websites_list, api.website_create, api.website_get, api.website_update, api.website_delete, api.website_sync,
  app.website_page_json, api.website_pages, api.website_search to api;

-- ---------------------------------------------------------------------------
-- The crawl job (owner connection; granted to no one)

-- A scan begins: the website's address, and the validators and text hashes of the
-- pages seen before (for conditional requests and unchanged text). Null when the
-- website is gone.
-- The host is leased for the scan's time bound and a margin; a scan of another
-- website on the same host (another organization's, the crawler service's) meanwhile
-- is put off a minute and answers busy.
create or replace function app.website_scan_start(website uuid) returns jsonb language plpgsql as $$
declare
  w app.websites;
  leased boolean;
begin
  select * into w from app.websites where id = website;
  if w.id is null then
    return null;
  end if;
  insert into app.crawl_leases as l (host, website_id, leased_until)
  values (w.domain, w.id, app.now() + make_interval(secs => app.limit('crawler.scanMaxSeconds') + 300))
  on conflict (host) do update set website_id = excluded.website_id, leased_until = excluded.leased_until
   where l.website_id = excluded.website_id or l.leased_until < app.now()
  returning true into leased;
  if leased is null then
    update app.websites set status = 'queued', next_scan_at = app.now() + interval '1 minute', updated_at = app.now()
     where id = w.id;
    perform app.website_schedule(w.id, interval '1 minute');
    return jsonb_build_object('busy', true);
  end if;
  update app.websites set status = 'scanning', last_scan_started_at = app.now(), updated_at = app.now()
   where id = website
  returning * into w;
  return jsonb_build_object('id', w.id, 'organizationId', w.organization_id, 'domain', w.domain, 'origin', w.origin,
    -- After a scan cut short, the pages visited longest ago come first.
    'stale', case when (w.last_scan->>'complete')::boolean is false
                  then coalesce((select jsonb_agg(x.url order by x.fetched_at, x.url)
                                   from (select p.url, p.fetched_at from app.website_pages p where p.website_id = w.id
                                          order by p.fetched_at, p.url limit app.limit('crawler.maxPagesPerScan')) x), '[]')
                  else '[]' end,
    'known', coalesce((select jsonb_object_agg(p.url, jsonb_build_object('etag', p.etag, 'lastModified', p.last_modified,
                                                                         'contentHash', p.content_hash,
                                                                         'links', coalesce(p.links, '[]')))
                         from app.website_pages p where p.website_id = w.id), '{}'));
end $$;

-- Queues a page's text for the indexing pipeline (its title heads its passages).
create or replace function app.index_queue_page(p app.website_pages) returns void language plpgsql as $$
declare
  f app.index_files;
begin
  insert into app.index_files as x (file_id, organization_id, website_page_id, file_name, size_bytes, metadata, language, status)
  values ('page:' || p.id, p.organization_id, p.id, left(coalesce(p.title, p.url), 255), octet_length(p.content),
          jsonb_build_object('url', p.url), coalesce(app.search_language(p.language), 'english'), 'queued')
  on conflict (file_id) do update
     set file_name = excluded.file_name, size_bytes = excluded.size_bytes, metadata = excluded.metadata,
         language = excluded.language, status = 'queued', reason = null, revision = x.revision + 1,
         attempts = 0, queued_at = app.now(), started_at = null, completed_at = null, updated_at = app.now()
  returning * into f;
  perform app.enqueue('index_file', jsonb_build_object('fileId', f.file_id, 'revision', f.revision), 'index_file:' || f.file_id);
end $$;

-- One visited page: {url, outcome: fetched | unchanged | skipped, ...} as the crawl
-- loop reports it (server/core/crawl/crawl.ts). A page fetched with text long enough
-- is indexed, queued again only when its text changed; a page no longer indexable
-- (gone, disallowed, too short) loses its passages.
drop function if exists app.website_page_store(uuid, jsonb);
create or replace function app.website_page_store(website uuid, visit jsonb) returns boolean language plpgsql as $$
declare
  w app.websites;
  p app.website_pages;
  indexable boolean := visit->>'outcome' = 'fetched' and coalesce((visit->>'meetsThreshold')::boolean, false);
  reason text := case when visit->>'outcome' = 'skipped' then visit->>'reason'
                      when visit->>'outcome' = 'fetched' and not indexable then 'below_word_count' end;
  -- A site saying "not now" (a network failure, a timeout, 429, 5xx) takes nothing
  -- away: an indexed page stays searchable until the site says it is gone.
  transient boolean := visit->>'outcome' = 'skipped'
    and (visit->>'reason' in ('network', 'timeout')
         or (visit->>'reason' = 'http_error' and ((visit->>'status')::integer = 429 or (visit->>'status')::integer >= 500)));
begin
  select * into w from app.websites where id = website;
  if w.id is null then
    -- Deleted during its scan: the scan stops.
    return false;
  end if;
  if visit->>'outcome' = 'unchanged' then
    update app.website_pages set fetched_at = app.now() where website_id = website and url = visit->>'url';
    return true;
  end if;
  select * into p from app.website_pages where website_id = website and url = visit->>'url' for update;
  if transient and p.status = 'indexed' then
    update app.website_pages set detail = left(visit->>'detail', 500), fetched_at = app.now() where id = p.id;
    return true;
  end if;
  if p.id is null then
    insert into app.website_pages (website_id, organization_id, url, status, skip_reason, detail, http_status, title,
                                   language, content, word_count, content_hash, etag, last_modified, changed_at, links)
    values (website, w.organization_id, visit->>'url', case when indexable then 'indexed' else 'skipped' end, reason,
            left(visit->>'detail', 500), (visit->>'status')::integer, left(visit->>'title', 500), visit->>'language',
            case when indexable then visit->>'text' end, (visit->>'wordCount')::integer, visit->>'contentHash',
            visit->>'etag', visit->>'lastModified', app.now(), visit->'links')
    returning * into p;
    if indexable then
      perform app.index_queue_page(p);
    end if;
    return true;
  end if;
  update app.website_pages
     set status = case when indexable then 'indexed' else 'skipped' end, skip_reason = reason,
         detail = left(visit->>'detail', 500), http_status = (visit->>'status')::integer,
         title = case when visit->>'outcome' = 'fetched' then left(visit->>'title', 500) else title end,
         language = case when visit->>'outcome' = 'fetched' then visit->>'language' else language end,
         content = case when indexable then visit->>'text' end,
         word_count = case when visit->>'outcome' = 'fetched' then (visit->>'wordCount')::integer else word_count end,
         changed_at = case when content_hash is distinct from visit->>'contentHash' or status <> (case when indexable then 'indexed' else 'skipped' end)
                           then app.now() else changed_at end,
         content_hash = case when indexable then visit->>'contentHash' end,
         etag = case when indexable then visit->>'etag' end,
         last_modified = case when indexable then visit->>'lastModified' end,
         links = case when visit->>'outcome' = 'fetched' then visit->'links' end,
         fetched_at = app.now()
   where id = p.id;
  if indexable and (p.status <> 'indexed' or p.content_hash is distinct from visit->>'contentHash') then
    perform app.index_queue_page((select x from app.website_pages x where x.id = p.id));
  elsif not indexable then
    delete from app.index_files where website_page_id = p.id;
  end if;
  return true;
end $$;

-- A scan ends: its counts, and the next scan an interval after this one ended (a
-- minute after one cut short by its time or page bound). After a complete scan, the
-- pages it no longer reached (no sitemap or link leads to them any more) are skipped
-- as unlinked and lose their passages. A sync asked for during the scan keeps its job.
drop function if exists app.website_scan_finish(uuid, jsonb, text);
create or replace function app.website_scan_finish(website uuid, summary jsonb, failure text, complete boolean) returns void
language plpgsql as $$
declare
  w app.websites;
  -- A sync asked for during the scan: its job is already queued to follow this one.
  sync_waiting boolean;
  next_after interval;
begin
  select x.next_scan_at <= app.now() and x.next_scan_at > x.last_scan_started_at into sync_waiting
    from app.websites x where x.id = website;
  select case when failure is null and not complete then interval '1 minute' else make_interval(secs => x.scan_interval) end
    into next_after from app.websites x where x.id = website;
  delete from app.crawl_leases where website_id = website;
  update app.websites
     set status = case when failure is null then 'idle' else 'failed' end, last_error = failure,
         last_scan = coalesce(summary, last_scan), last_scan_finished_at = app.now(), updated_at = app.now(),
         next_scan_at = case when sync_waiting then app.now() else app.now() + next_after end
   where id = website
  returning * into w;
  if w.id is null then
    return;
  end if;
  if complete then
    with gone as (
      update app.website_pages p
         set status = 'skipped', skip_reason = 'unlinked', detail = 'no sitemap or link of the site leads here any more',
             content = null, content_hash = null, etag = null, last_modified = null, changed_at = app.now()
       where p.website_id = w.id and p.fetched_at < w.last_scan_started_at and p.skip_reason is distinct from 'unlinked'
      returning p.id
    )
    delete from app.index_files f using gone where f.website_page_id = gone.id;
  end if;
  if not sync_waiting then
    perform app.website_schedule(w.id, next_after);
  end if;
end $$;

-- ---------------------------------------------------------------------------
-- The crawler service's own websites (no organization; server/services/crawler, on
-- the owner connection; granted to no one)

create or replace function app.crawler_website_json(w app.websites) returns jsonb language sql stable as $$
  select jsonb_build_object(
    'domain', w.domain, 'url', w.origin, 'scan_interval', w.scan_interval, 'status', w.status,
    'last_error', w.last_error, 'last_scan_started_at', app.ms(w.last_scan_started_at),
    'last_scan_finished_at', app.ms(w.last_scan_finished_at), 'next_scan_at', app.ms(w.next_scan_at),
    'last_scan', w.last_scan,
    'pages', (select count(*) from app.website_pages p where p.website_id = w.id),
    'indexed_pages', (select count(*) from app.website_pages p where p.website_id = w.id and p.status = 'indexed'),
    'created_at', app.ms(w.created_at), 'updated_at', app.ms(w.updated_at))
$$;

-- The service's website a domain names, given as POST /api/v1/websites takes it; null
-- when none (or when it is no domain).
create or replace function app.crawler_website(address text) returns app.websites language sql stable as $$
  select w.* from app.websites w
   where w.organization_id is null and w.domain = app.website_address(address)->>'domain'
$$;

create or replace function app.crawler_website_delete(address text) returns boolean language plpgsql as $$
declare
  w app.websites := app.crawler_website(address);
begin
  if w.id is null then
    return false;
  end if;
  delete from app.websites where id = w.id;
  perform app.website_unschedule(w.id);
  return true;
end $$;

-- A batch of visited pages from one scan, in the order visited (the crawl sends them a
-- few at a time: one statement and one commit per batch, not per page). False when
-- the website is gone. The commit does not wait for the disk: a batch lost in a crash
-- is only fetched again by the next scan.
create or replace function app.website_pages_store(website uuid, visits jsonb) returns boolean language plpgsql as $$
declare
  visit jsonb;
begin
  perform set_config('synchronous_commit', 'off', true);
  for visit in select v from jsonb_array_elements(visits) v loop
    if not app.website_page_store(website, visit) then
      return false;
    end if;
  end loop;
  return true;
end $$;
