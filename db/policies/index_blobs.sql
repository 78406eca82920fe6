-- Past these policies: none.
-- The bytes of uploads waiting for extraction: the indexing pipeline's alone.
alter table app.index_blobs enable row level security;
alter table app.index_blobs force row level security;
select app.drop_policies('app.index_blobs');
