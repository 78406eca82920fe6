-- Past these policies: none (the crawl job writes pages on the owner connection).
-- A website's pages are read by every member of its organization; only the crawl job
-- writes them, and they go with their website.
alter table app.website_pages enable row level security;
alter table app.website_pages force row level security;
select app.drop_policies('app.website_pages');
grant select on app.website_pages to api;

create policy website_pages_select on app.website_pages for select to api
  using (organization_id = (select app.org_id()));
