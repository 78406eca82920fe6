-- Past these policies: none.
-- An owner's indexed vocabulary: the pipeline writes it; a member's search reads their
-- organization's words only (they name words, never passages or documents).
alter table app.index_words enable row level security;
alter table app.index_words force row level security;
select app.drop_policies('app.index_words');
grant select on app.index_words to api;

create policy index_words_select on app.index_words for select to api
  using (owner = (select app.org_id()));
