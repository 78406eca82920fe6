-- The index store: what the indexing pipeline (the indexing service and the worker's
-- index_file job, one code path in server/core/indexing) reads and writes. A file
-- moves queued -> running -> completed | failed; every new version bumps its
-- revision, and a pipeline still working on an older revision writes nothing.
--
-- The pipeline's functions run on the owner connection and are granted to no one.
-- The two that queue platform rows are called inside request operations
-- (SECURITY DEFINER, see db/policies/index_files.sql).

-- Cosine similarity of two embeddings: pgvector's operator where the extension is
-- installed, plain SQL otherwise. Vectors of different lengths (another model) are
-- never similar.
do $$
begin
  if exists (select 1 from pg_extension where extname = 'vector') then
    execute $f$
      create or replace function app.cosine_similarity(a real[], b real[]) returns double precision
      language sql immutable parallel safe as $body$
        select case when cardinality(a) = cardinality(b) and cardinality(a) > 0
                    then 1 - (a::public.vector <=> b::public.vector) end
      $body$ $f$;
  else
    execute $f$
      create or replace function app.cosine_similarity(a real[], b real[]) returns double precision
      language sql immutable parallel safe as $body$
        select case when cardinality(a) = cardinality(b) and cardinality(a) > 0 then (
          select sum(x * y) / nullif(sqrt(sum(x * x)) * sqrt(sum(y * y)), 0)
            from unnest(a, b) as pair (x, y)) end
      $body$ $f$;
  end if;
end $$;

-- The text search configuration a language name selects, or null when PostgreSQL has
-- none by that name ('english', 'german', 'simple', ...).
create or replace function app.search_language(name text) returns regconfig language sql stable as $$
  select c.oid::regconfig from pg_ts_config c
    join pg_namespace n on n.oid = c.cfgnamespace
   where n.nspname = 'pg_catalog' and c.cfgname = lower(name)
$$;

-- The owner of the indexing service's own uploads in the vocabulary (they belong to no
-- organization).
create or replace function app.nil_owner() returns uuid language sql immutable as $$
  select '00000000-0000-0000-0000-000000000000'::uuid
$$;

create or replace function app.index_file_json(f app.index_files) returns jsonb language sql stable as $$
  select jsonb_build_object('file_id', f.file_id, 'status', f.status, 'reason', f.reason,
    'file_name', f.file_name, 'size', f.size_bytes, 'chunks', f.chunk_count, 'metadata', f.metadata,
    'language', f.language::text,
    'queued_at', app.ms(f.queued_at), 'started_at', app.ms(f.started_at), 'completed_at', app.ms(f.completed_at))
$$;

-- A new version of an uploaded file (the indexing service): queued with its bytes,
-- its earlier chunks kept until the new ones replace them. A file id that names a
-- platform document or entry is not the uploader's to replace.
create or replace function app.index_accept(file text, name text, bytes bytea, meta jsonb, lang regconfig, background boolean)
returns jsonb language plpgsql as $$
declare
  f app.index_files;
begin
  if file ~ '^(document|knowledge|page):' then
    perform app.fail('FILE_ID_RESERVED', 409, 'file_ids starting document:, knowledge: or page: name the platform''s own documents; choose another.');
  end if;
  select * into f from app.index_files where file_id = file for update;
  insert into app.index_files as x (file_id, file_name, size_bytes, metadata, language, status)
  values (file, name, octet_length(bytes), coalesce(meta, '{}'), lang, 'queued')
  on conflict (file_id) do update
     set file_name = excluded.file_name, size_bytes = excluded.size_bytes, metadata = excluded.metadata,
         language = excluded.language, status = 'queued', reason = null, revision = x.revision + 1,
         attempts = 0, queued_at = app.now(), started_at = null, completed_at = null, updated_at = app.now()
  returning * into f;
  insert into app.index_blobs (file_id, revision, bytes) values (f.file_id, f.revision, bytes)
  on conflict (file_id) do update set revision = excluded.revision, bytes = excluded.bytes;
  -- A sync upload is indexed by the request; its job waits a while as a safety net,
  -- and finds the revision settled unless the request's process died meanwhile.
  perform app.enqueue('index_file', jsonb_build_object('fileId', f.file_id, 'revision', f.revision), 'index_file:' || f.file_id,
                      case when background then null else interval '5 minutes' end);
  return app.index_file_json(f);
end $$;

-- Queues a platform row (a document's bytes or text, an entry's text) for indexing.
create or replace function app.index_queue_platform(file text, organization uuid, document uuid, entry uuid, name text,
  size bigint, meta jsonb, lang regconfig) returns void
language plpgsql security definer set search_path = pg_catalog, app as $$
declare
  f app.index_files;
begin
  -- A request queues rows of its own organization only.
  if app.org_id() is not null and organization is distinct from app.org_id() then
    raise exception 'index_queue_platform: organization % is not the caller''s', organization;
  end if;
  insert into app.index_files as x (file_id, organization_id, document_id, knowledge_entry_id, file_name, size_bytes,
                                    metadata, language, status)
  values (file, organization, document, entry, left(name, 255), size, coalesce(meta, '{}'), lang, 'queued')
  on conflict (file_id) do update
     set file_name = excluded.file_name, size_bytes = excluded.size_bytes, metadata = excluded.metadata,
         language = excluded.language, status = 'queued', reason = null, revision = x.revision + 1,
         attempts = 0, queued_at = app.now(), started_at = null, completed_at = null, updated_at = app.now()
   where x.organization_id = excluded.organization_id
  returning * into f;
  if f.file_id is null then
    raise exception 'index file % belongs to another owner', file;
  end if;
  -- One job per file: a queued one is replaced, so repeated retries index once.
  perform app.enqueue('index_file', jsonb_build_object('fileId', f.file_id, 'revision', f.revision), 'index_file:' || f.file_id);
end $$;
revoke execute on function app.index_queue_platform(text, uuid, uuid, uuid, text, bigint, jsonb, regconfig) from public;
grant execute on function app.index_queue_platform(text, uuid, uuid, uuid, text, bigint, jsonb, regconfig) to api;

create or replace function app.index_queue_document(d app.documents) returns void language sql as $$
  select app.index_queue_platform('document:' || d.id, d.organization_id, d.id, null, d.file_name, d.size_bytes, d.metadata,
    coalesce(app.search_language(d.metadata->>'language'), 'english'))
$$;

create or replace function app.index_queue_entry(k app.knowledge_entries) returns void language sql as $$
  select app.index_queue_platform('knowledge:' || k.id, k.organization_id, null, k.id, k.title,
    octet_length(k.title) + octet_length(k.content), '{}', 'english')
$$;

-- The platform document's indexing state follows its index row.
create or replace function app.index_mirror_document(f app.index_files) returns void language sql as $$
  update app.documents
     set indexing_status = case f.status when 'completed' then 'indexed' when 'failed' then 'failed' else 'indexing' end,
         indexing_error = case when f.status = 'failed' then f.reason end,
         updated_at = app.now()
   where f.document_id is not null and id = f.document_id
$$;

-- The pipeline locks a platform document before its index row: the order request
-- operations take them in (a retry changes the document, then queues its row; a
-- delete removes the document, then its row by cascade), so the two never deadlock.
create or replace function app.index_lock_document(file text) returns void language plpgsql as $$
begin
  perform 1 from app.documents d
   where d.id = (select f.document_id from app.index_files f where f.file_id = file)
     for no key update;
end $$;

-- Takes a queued (or interrupted) revision to work on, and where its bytes are:
-- source 'blob' (bytes here), 'object' (the object store, checked by ETag) or 'text'.
-- Nothing when the file is gone, settled, or at a newer revision.
create or replace function app.index_claim(file text, at_revision integer,
  out file_name text, out language regconfig, out organization_id uuid, out source text,
  out bytes bytea, out object_key text, out object_etag text, out text_content text, out text_heading text,
  out attempts integer)
language plpgsql as $$
declare
  f app.index_files;
  d app.documents;
  k app.knowledge_entries;
begin
  perform app.index_lock_document(file);
  update app.index_files x
     set status = 'running', started_at = app.now(), attempts = x.attempts + 1, updated_at = app.now()
   where x.file_id = file and x.revision = at_revision and x.status in ('queued', 'running')
  returning * into f;
  if f.file_id is null then
    return;
  end if;
  perform app.index_mirror_document(f);
  file_name := f.file_name;
  language := f.language;
  organization_id := f.organization_id;
  attempts := f.attempts;
  if f.document_id is not null then
    select * into d from app.documents where id = f.document_id;
    if d.inline_content is not null then
      source := 'text';
      text_content := d.inline_content;
    else
      source := 'object';
      object_key := d.object_key;
      object_etag := d.object_etag;
    end if;
  elsif f.knowledge_entry_id is not null then
    select * into k from app.knowledge_entries where id = f.knowledge_entry_id;
    source := 'text';
    text_content := k.content;
    -- The title heads every passage of the entry, so a search finds it by its title too.
    text_heading := k.title;
  elsif f.website_page_id is not null then
    -- A website's page: its readable text, headed by its title.
    select p.content, p.title into text_content, text_heading from app.website_pages p where p.id = f.website_page_id;
    source := 'text';
    text_content := coalesce(text_content, '');
  else
    select b.bytes into bytes from app.index_blobs b where b.file_id = f.file_id and b.revision = f.revision;
    source := case when bytes is null then null else 'blob' end;
  end if;
end $$;

-- Settles a revision: its chunks replace the earlier ones in one step, so a search
-- never sees a file half-indexed. chunks: [{ordinal, content, page, heading, embedding}].
create or replace function app.index_complete(file text, at_revision integer, extracted text, chunks jsonb, note text)
returns jsonb language plpgsql as $$
declare
  f app.index_files;
begin
  perform app.index_lock_document(file);
  update app.index_files x
     set status = 'completed', reason = note, content = extracted, chunk_count = jsonb_array_length(chunks),
         completed_at = app.now(), updated_at = app.now()
   where x.file_id = file and x.revision = at_revision and x.status = 'running'
  returning * into f;
  if f.file_id is null then
    return null;
  end if;
  delete from app.index_chunks c where c.file_id = f.file_id;
  insert into app.index_chunks (file_id, ordinal, organization_id, document_id, knowledge_entry_id, website_page_id,
                                content, page, heading, language, embedding)
  select f.file_id, (c->>'ordinal')::integer, f.organization_id, f.document_id, f.knowledge_entry_id, f.website_page_id,
         c->>'content',
         (c->>'page')::integer, c->>'heading', f.language,
         case when jsonb_typeof(c->'embedding') = 'array'
              then array(select jsonb_array_elements_text(c->'embedding')::real) end
    from jsonb_array_elements(chunks) c;
  delete from app.index_blobs b where b.file_id = f.file_id;
  -- Its words join the owner's vocabulary (never removed: a word no passage uses any
  -- more only widens a fuzzy search, which then finds nothing for it).
  insert into app.index_words (owner, word)
  select distinct coalesce(f.organization_id, app.nil_owner()), w
    from regexp_split_to_table(lower(extracted), '[^[:alnum:]]+') w
   where length(w) between 3 and 40
  on conflict do nothing;
  perform app.index_mirror_document(f);
  return app.index_file_json(f);
end $$;

-- Vectors for chunks of a completed revision, a batch at a time after completion:
-- the passages are searchable by text at once, by vector as their batches land.
-- vectors: [{ordinal, embedding}].
create or replace function app.index_embed(file text, at_revision integer, vectors jsonb) returns integer language sql as $$
  with current as (
    select f.file_id from app.index_files f where f.file_id = file and f.revision = at_revision and f.status = 'completed'
  ), updated as (
    update app.index_chunks c
       set embedding = array(select jsonb_array_elements_text(v->'embedding')::real)
      from current, jsonb_array_elements(vectors) v
     where c.file_id = current.file_id and c.ordinal = (v->>'ordinal')::integer
    returning 1
  ) select count(*)::integer from updated
$$;

create or replace function app.index_fail(file text, at_revision integer, failure text) returns jsonb language plpgsql as $$
declare
  f app.index_files;
begin
  perform app.index_lock_document(file);
  update app.index_files x
     set status = 'failed', reason = left(failure, 1000), content = null, chunk_count = 0,
         completed_at = app.now(), updated_at = app.now()
   where x.file_id = file and x.revision = at_revision and x.status in ('queued', 'running')
  returning * into f;
  if f.file_id is null then
    return null;
  end if;
  delete from app.index_chunks c where c.file_id = f.file_id;
  delete from app.index_blobs b where b.file_id = f.file_id;
  perform app.index_mirror_document(f);
  return app.index_file_json(f);
end $$;

-- uploads_only: the indexing service sees its own uploads; the platform's rows are
-- not_found to it.
drop function if exists app.index_statuses(text[]);
create or replace function app.index_statuses(files text[], uploads_only boolean) returns jsonb language sql stable as $$
  select coalesce(jsonb_agg(coalesce(
           (select jsonb_build_object('file_id', f.file_id, 'status', f.status, 'reason', f.reason)
              from app.index_files f
             where f.file_id = wanted.id and (not uploads_only or (f.organization_id is null and f.website_page_id is null))),
           jsonb_build_object('file_id', wanted.id, 'status', 'not_found', 'reason', null))
         order by wanted.position), '[]')
    from unnest(files) with ordinality as wanted (id, position)
$$;

create or replace function app.index_file(file text) returns app.index_files language sql stable as $$
  select * from app.index_files where file_id = file
$$;

-- Removes an upload to the indexing service and its chunks.
create or replace function app.index_delete(file text) returns boolean language plpgsql as $$
declare
  f app.index_files := app.index_file(file);
begin
  -- The platform's rows are not the service's: they go with their document, entry or
  -- website page (the crawler service's pages too, which belong to no organization).
  if f.file_id is null or f.organization_id is not null or f.website_page_id is not null then
    return false;
  end if;
  delete from app.index_files where file_id = file;
  return true;
end $$;

-- Ranked passages: PostgreSQL full text (websearch syntax, in the query's language),
-- similar words (the query's words matched by trigrams against the owner's
-- vocabulary, then searched as full text) and, given a query embedding, cosine
-- similarity, fused by
-- reciprocal rank (k = 60). score is the fused score over its maximum, so 1 means
-- ranked first by every signal in use. Runs with the caller's rights: for the
-- request role, index_chunks' policy keeps out every passage of a document or entry
-- the caller cannot read. owner names the organization searched, or null for the
-- indexing service's own uploads (which belong to none); files null means every file
-- of that owner the caller may read.
drop function if exists app.search_chunks(text, text[], integer, double precision, real[], regconfig);
-- The full-text ordering is chosen once, by what db/schema/0026_search_rum.sql
-- installed: with rum, `search <=> query` (rank order from the index, ts_rank's
-- inverse); without, ts_rank_cd over every match (cover density: words near each other
-- rank higher), descending.
do $do$
declare
  rum boolean := exists (select 1 from pg_indexes where schemaname = 'app' and indexname = 'index_chunks_search_rum_idx');
  template text := $template$
create or replace function app.search_chunks(query text, files text[], top_k integer, threshold double precision,
  query_embedding real[], lang regconfig, owner uuid)
returns table (file_id text, ordinal integer, content text, page integer, heading text, document_id uuid,
               knowledge_entry_id uuid, score double precision)
-- A misspelt word still finds its passage: pg_trgm's default similarity (0.3) is kept
-- for the vocabulary lookup.
-- One plan per session whatever the caller's plan mode: a custom plan costs about 2 ms
-- a call (rum's estimate reads the index for every query word), more than the search.
-- Bitmap scans are off because a generic plan would otherwise fetch every matching
-- passage as a bitmap and sort them all (20-110 ms over 100,000 passages) instead of
-- reading the rum index in rank order and stopping at the candidates.
-- (test/knowledge/search-plan.test.ts reads the plans.)
language plpgsql stable
set plan_cache_mode = force_generic_plan
set enable_bitmapscan = off
as $body$
#variable_conflict use_column
declare
  candidates integer := greatest(top_k * 4, 40);
  tsq tsquery := websearch_to_tsquery(lang, query);
  -- The signals in use: full text, similar words when the query has a word the
  -- vocabulary lacks, vectors when a query embedding is given.
  signals integer;
  -- Words the query excludes (-word, -"a phrase") exclude for every signal; the fuzzy
  -- ones compare the rest of the query, without the search syntax.
  excluded tsquery;
  fuzzy text;
  similar_words tsquery;
begin
  select websearch_to_tsquery(lang, string_agg(m[1], ' or ')) into excluded
    from regexp_matches(query, '(?:^|\s)-("[^"]*"|[^\s"]+)', 'g') m;
  fuzzy := btrim(regexp_replace(regexp_replace(query, '(?:^|\s)-("[^"]*"|[^\s"]+)', ' ', 'g'), '"|\mor\M', ' ', 'gi'));
  if numnode(excluded) = 0 then
    excluded := null;
  end if;
  -- A query word the vocabulary lacks (a typo, a partial word) stands for its three
  -- nearest words there, any of them matching; a word it has is full text's already.
  -- Every query word that has some must match, as in the full-text signal.
  select string_agg(alternatives, ' & ') into fuzzy
    from (select '(' || string_agg(v.word, ' | ' order by v.word) || ')' as alternatives
            from (select distinct term from regexp_split_to_table(lower(fuzzy), '[^[:alnum:]]+') term
                   where length(term) >= 3) q
            cross join lateral (
              select x.word from app.index_words x
               where x.owner = coalesce(search_chunks.owner, app.nil_owner()) and q.term % x.word
               order by x.word <-> q.term
               limit 3) v
           -- A probe per query word through the vocabulary's primary key (a scalar
           -- subquery, never a join over the vocabulary). Written as the first word at
           -- or after the term: as `word = term` the planner takes the trigram index,
           -- which costs about 0.5 ms a word.
           where (select k.word from app.index_words k
                   where k.owner = coalesce(search_chunks.owner, app.nil_owner()) and k.word >= q.term
                   order by k.word limit 1) is distinct from q.term
           group by q.term) w;
  similar_words := case when fuzzy is not null then to_tsquery(lang, fuzzy) end;
  if numnode(similar_words) = 0 then
    similar_words := null;
  end if;
  signals := 1 + (similar_words is not null)::integer + (query_embedding is not null)::integer;
  return query
  -- The named files are a hashed set the index scan filters by: as `= any (files)` the
  -- planner would estimate the selectivity of each of up to 1,000 ids on every call
  -- (2-3 ms, more than the search itself).
  with lexical as (
    -- The best candidates first, ties broken by position; the inner order is the bare
    -- ranking expression, so that a rum index can answer it in order.
    select x.file_id, x.ordinal, row_number() over (order by x.rank_key, x.file_id, x.ordinal) as rank
      from (select c.file_id, c.ordinal, {rank_key_tsq} as rank_key
              from app.index_chunks c
             where c.search @@ tsq and (files is null or c.file_id in (select unnest(files)))
               and (c.organization_id = owner or (owner is null and c.organization_id is null))
             order by {rank_key_tsq}
             limit candidates) x
  ), trigram as (
    -- Words of the owner's vocabulary like the query's (typos, partial words), searched
    -- as full text.
    select x.file_id, x.ordinal, row_number() over (order by x.rank_key, x.file_id, x.ordinal) as rank
      from (select c.file_id, c.ordinal, {rank_key_similar} as rank_key
              from app.index_chunks c
             where similar_words is not null and c.search @@ similar_words and (files is null or c.file_id in (select unnest(files)))
               and (c.organization_id = owner or (owner is null and c.organization_id is null))
               and (excluded is null or not c.search @@ excluded)
             order by {rank_key_similar}
             limit candidates) x
  ), semantic as (
    select c.file_id, c.ordinal,
           row_number() over (order by app.cosine_similarity(c.embedding, query_embedding) desc, c.file_id, c.ordinal) as rank
      from app.index_chunks c
     where query_embedding is not null and c.embedding is not null
       and cardinality(c.embedding) = cardinality(query_embedding) and (files is null or c.file_id in (select unnest(files)))
       and (c.organization_id = owner or (owner is null and c.organization_id is null))
       and (excluded is null or not c.search @@ excluded)
     order by app.cosine_similarity(c.embedding, query_embedding) desc, c.file_id, c.ordinal
     limit candidates
  ), fused as (
    select h.file_id, h.ordinal, sum(1.0 / (60 + h.rank)) * 61 / signals as score
      from (select * from lexical union all select * from trigram union all select * from semantic) h
     group by h.file_id, h.ordinal
  ), kept as (
    -- Passage text (toasted, often kilobytes) is read for the results only, not for
    -- every candidate.
    select f.file_id, f.ordinal, f.score
      from fused f
     where f.score >= coalesce(threshold, 0)
     order by f.score desc, f.file_id, f.ordinal
     limit top_k
  )
  select c.file_id, c.ordinal, c.content, c.page, c.heading, c.document_id, c.knowledge_entry_id, k.score::double precision
    from kept k
    join app.index_chunks c on c.file_id = k.file_id and c.ordinal = k.ordinal
   order by k.score desc, c.file_id, c.ordinal;
end $body$
$template$;
begin
  execute replace(replace(template,
    '{rank_key_tsq}', case when rum then 'c.search <=> tsq' else '-ts_rank_cd(c.search, tsq, 1)' end),
    '{rank_key_similar}', case when rum then 'c.search <=> similar_words' else '-ts_rank_cd(c.search, similar_words, 1)' end);
end $do$;

-- The organization's embeddings model: the first catalog model added that lists the
-- 'embeddings' capability. Null when it has none.
create or replace function app.embedding_model(organization uuid) returns jsonb language sql stable as $$
  select jsonb_build_object('id', m.id, 'providerSlug', m.provider_slug, 'baseUrl', p.base_url, 'apiKey', p.api_key)
    from app.models m
    join app.model_providers p on p.organization_id = m.organization_id and p.slug = m.provider_slug
   where m.organization_id = organization and m.capabilities ? 'embeddings'
   order by m.created_at, m.id
   limit 1
$$;

-- Request operations queue their rows and search with the caller's rights.
grant execute on function app.index_queue_document, app.index_queue_entry, app.search_language, app.nil_owner,
  app.search_chunks(text, text[], integer, double precision, real[], regconfig, uuid), app.cosine_similarity to api;
