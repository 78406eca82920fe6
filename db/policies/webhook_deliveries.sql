-- Accepted webhook deliveries, kept for deduplication. No policy admits the request
-- role: deliveries are keyless, and only the delivery path reads and writes them (the
-- worker forgets them past their windows).
-- Past these policies: app.webhook_deliver (the caller-less webhook path: it looks up
-- and records deliveries of the trigger the token names).
alter table app.webhook_deliveries enable row level security;
alter table app.webhook_deliveries force row level security;
select app.drop_policies('app.webhook_deliveries');
