-- Token buckets of every holder (users, source addresses, triggers); not tenant data.
-- No policy admits the request role: forced row-level security with none leaves the
-- table to the functions that own its use.
-- Past these policies: app.take_tokens (takes and refunds tokens for any holder,
-- also before a caller is known), app.authenticate (reads the address's
-- failed-authentication bucket and the key holder's budgets before the operation),
-- app.forget_idle_rate_buckets (the worker's hourly cleanup).
alter table app.rate_buckets enable row level security;
alter table app.rate_buckets force row level security;
select app.drop_policies('app.rate_buckets');
