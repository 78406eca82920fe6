-- The words of everything indexed, for fuzzy search: a misspelt query word is matched
-- by trigram similarity against this short list, not against every passage's text,
-- and the words it finds are then searched as full text. One list per owner (an
-- organization, or the nil uuid for the indexing service's own uploads): it says which
-- words the owner's documents use, never where.
-- btree_gist lets the word index lead with the owner.
create extension if not exists btree_gist;
create table app.index_words (
  owner uuid not null,
  word text not null check (length(word) between 3 and 40),
  primary key (owner, word)
);
-- GiST: a misspelt word's nearest words come from the index in distance order.
create index index_words_trigram_idx on app.index_words using gist (owner, word gist_trgm_ops);

insert into app.index_words (owner, word)
select distinct coalesce(c.organization_id, '00000000-0000-0000-0000-000000000000'), w
  from app.index_chunks c, regexp_split_to_table(lower(c.content), '[^[:alnum:]]+') w
 where length(w) between 3 and 40
on conflict do nothing;

-- Ranking reads every matching passage's text vector: lz4 decompresses it several
-- times faster than the default pglz (where the server is built with lz4, as Debian's
-- and the official images are).
do $$
begin
  alter table app.index_chunks alter column search set compression lz4, alter column content set compression lz4;
exception when feature_not_supported or invalid_parameter_value then
  raise notice 'lz4 is not available; passages stay compressed with pglz';
end $$;
