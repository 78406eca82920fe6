-- Websites (docs/websites.md): sites the crawler scans at an interval, their pages,
-- and the pages' text in the index store, searched like documents. A website belongs
-- to an organization (the public API), or to none (the crawler service's own, which
-- members never see). Row-level security is in db/policies/websites.sql and
-- website_pages.sql.

create table app.websites (
  id uuid primary key default gen_random_uuid(),
  organization_id uuid references app.organizations (id) on delete cascade,
  -- The host, with its port when not the scheme's default, lower-case: the natural key.
  domain text not null check (length(domain) between 1 and 261 and domain ~ '^[a-z0-9.:\[\]-]+$'),
  -- Where a scan starts: https://domain unless the site was given with http://.
  origin text not null check (origin ~ '^https?://'),
  scan_interval integer not null check (scan_interval between 60 and 31536000),
  status text not null default 'queued' check (status in ('queued', 'scanning', 'idle', 'failed')),
  -- Why the last scan failed as a whole (robots.txt unreachable is not a failure).
  last_error text,
  last_scan_started_at timestamptz,
  last_scan_finished_at timestamptz,
  next_scan_at timestamptz,
  -- The last scan's counts: {visited, fetched, unchanged, skipped}.
  last_scan jsonb,
  created_by uuid references app.users (id) on delete set null,
  created_at timestamptz not null default app.now(),
  updated_at timestamptz not null default app.now()
);
-- One website per domain and owner; the crawler service's own (no organization) too.
create unique index websites_domain_key on app.websites (coalesce(organization_id, '00000000-0000-0000-0000-000000000000'), domain);
create index websites_created_idx on app.websites (organization_id, created_at desc, id desc);

create table app.website_pages (
  id uuid primary key default gen_random_uuid(),
  website_id uuid not null references app.websites (id) on delete cascade,
  organization_id uuid references app.organizations (id) on delete cascade,
  url text not null check (url ~ '^https?://' and length(url) <= 2048),
  -- indexed: fetched, readable and long enough; skipped: seen and not indexed
  -- (robots.txt, not HTML, too large, below the word count, ...), with its reason.
  status text not null check (status in ('indexed', 'skipped')),
  skip_reason text,
  detail text,
  http_status integer,
  title text,
  language text,
  content text,
  word_count integer,
  -- sha256 of the text: a page fetched again with the same text is not indexed again.
  content_hash text,
  -- The page's links on the site: a page answered 304 on the next scan is not read
  -- again, and the crawl still reaches the pages behind it through these.
  links jsonb,
  -- Validators for the next scan's conditional request.
  etag text,
  last_modified text,
  first_seen_at timestamptz not null default app.now(),
  fetched_at timestamptz not null default app.now(),
  -- When its text last changed.
  changed_at timestamptz,
  unique (website_id, url),
  check (status = 'indexed' or skip_reason is not null)
);

-- A page's passages live in the index store like a document's; file_id 'page:<id>'.
alter table app.index_files add column website_page_id uuid references app.website_pages (id) on delete cascade;
alter table app.index_files drop constraint index_files_check;
alter table app.index_files add constraint index_files_owner_check
  check ((document_id is not null)::integer + (knowledge_entry_id is not null)::integer + (website_page_id is not null)::integer <= 1);
create unique index index_files_page_idx on app.index_files (website_page_id) where website_page_id is not null;
alter table app.index_chunks add column website_page_id uuid;
create index index_chunks_page_idx on app.index_chunks (website_page_id) where website_page_id is not null;

-- One scan at a time per host, across every organization and the crawler service:
-- a scan leases its website's host (host and port) for at most its time bound, and a
-- scan that finds the host leased waits a minute. Owner-only.
create table app.crawl_leases (
  host text primary key,
  website_id uuid not null references app.websites (id) on delete cascade,
  leased_until timestamptz not null
);
