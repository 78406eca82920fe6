-- Whether a bucket's last take was granted, so one UPDATE ... RETURNING both takes a
-- token and says whether it could (see app.take_tokens).
alter table app.rate_buckets add column granted boolean not null default true;
