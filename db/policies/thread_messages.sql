-- Messages exist for whoever sees their thread (its owner). The owner writes their
-- own message and the pending answer a send starts, and may stop an answer; the
-- answer's text is the worker's, written on the owner's connection. The thread is
-- looked up by the row's own key (the threads policy decides whether it is visible),
-- so a check costs one index probe however many threads the caller owns.
-- Past these policies: none.
alter table app.thread_messages enable row level security;
alter table app.thread_messages force row level security;
select app.drop_policies('app.thread_messages');
grant select, insert on app.thread_messages to api;
grant update (status, finish_reason, updated_at) on app.thread_messages to api;

create policy thread_messages_select on app.thread_messages for select to api
  using (organization_id = (select app.org_id()) and exists (select 1 from app.threads t
                                                         where t.organization_id = thread_messages.organization_id
                                                           and t.id = thread_messages.thread_id));

create policy thread_messages_insert on app.thread_messages for insert to api
  with check (organization_id = (select app.org_id()) and exists (select 1 from app.threads t
                                                         where t.organization_id = thread_messages.organization_id
                                                           and t.id = thread_messages.thread_id)
              and ((role = 'user' and status = 'complete') or (role = 'assistant' and status = 'pending' and parts = '[]')));

create policy thread_messages_stop on app.thread_messages for update to api
  using (organization_id = (select app.org_id()) and exists (select 1 from app.threads t
                                                         where t.organization_id = thread_messages.organization_id
                                                           and t.id = thread_messages.thread_id)
         and role = 'assistant' and status in ('pending', 'streaming'))
  with check (status = 'stopped');
