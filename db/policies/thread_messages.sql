-- Messages exist for whoever sees their thread (its owner). The owner writes their
-- own message and the pending answer a send starts, and may stop an answer; the
-- answer's text is the worker's, written on the owner's connection.
-- Past these policies: none.
alter table app.thread_messages enable row level security;
alter table app.thread_messages force row level security;
select app.drop_policies('app.thread_messages');
grant select, insert on app.thread_messages to api;
grant update (status, finish_reason, updated_at) on app.thread_messages to api;

create policy thread_messages_select on app.thread_messages for select to api
  using (organization_id = (select app.org_id()) and thread_id in (select t.id from app.threads t));

create policy thread_messages_insert on app.thread_messages for insert to api
  with check (organization_id = (select app.org_id()) and thread_id in (select t.id from app.threads t)
              and ((role = 'user' and status = 'complete') or (role = 'assistant' and status = 'pending' and parts = '[]')));

create policy thread_messages_stop on app.thread_messages for update to api
  using (organization_id = (select app.org_id()) and thread_id in (select t.id from app.threads t)
         and role = 'assistant' and status in ('pending', 'streaming'))
  with check (status = 'stopped');
