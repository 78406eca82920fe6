-- Which website's scan holds a host (db/schema/0027_websites.sql). The crawl job's
-- alone, on the owner connection: no grant and no policy.
-- Past these policies: none.
alter table app.crawl_leases enable row level security;
alter table app.crawl_leases force row level security;
select app.drop_policies('app.crawl_leases');
