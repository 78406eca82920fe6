-- Passages in rank order straight from the index, where the server has the rum
-- extension (Debian's and the PostgreSQL project's postgresql-15-rum; CI and the
-- compose image install it). PostgreSQL's GIN index finds the passages a query
-- matches but cannot order them: every match is read from the table and ranked, about
-- 30 ms per 1,000 matches, so a common word over 100,000 passages took over half a
-- second. A rum index keeps word positions in the index and answers
-- `search <=> query` (the inverse of ts_rank) in order, so a search reads only the
-- passages it returns. It costs writes: a passage is about 3 ms to index, against
-- 0.2 ms for GIN (BENCHMARKS.md).
--
-- Where rum is missing the GIN index stays and app.search_chunks ranks every match
-- (db/functions/0130_index_store.sql picks its ordering by what is installed here).
do $$
declare
  f regprocedure;
begin
  if not exists (select 1 from pg_available_extensions where name = 'rum') then
    return;
  end if;
  create extension if not exists rum;
  -- The request role ranks passages with the operator's functions (app.search_chunks
  -- runs with the caller's rights); EXECUTE is not granted to PUBLIC since 0011.
  for f in select p.oid::regprocedure from pg_proc p
             join pg_depend d on d.classid = 'pg_proc'::regclass and d.objid = p.oid and d.deptype = 'e'
             join pg_extension e on e.oid = d.refobjid
            where e.extname = 'rum' loop
    execute format('grant execute on function %s to api', f);
  end loop;
  create index index_chunks_search_rum_idx on app.index_chunks using rum (search rum_tsvector_ops);
  -- rum answers @@ too: the GIN index would only cost every write.
  drop index app.index_chunks_search_idx;
exception when insufficient_privilege then
  raise notice 'rum is available but this role cannot create it; passages are ranked after the GIN index finds them';
end $$;

-- Similar words are found in the vocabulary (app.index_words, 0025), never by trigrams
-- over passages: this index only cost every write of a passage.
drop index if exists app.index_chunks_trigram_idx;
