-- An operation that raises many events of one name at once (a contact import raises
-- one contact.created or contact.updated per row) writes them to the outbox as one
-- row: their payloads as one JSON array, in the order they were raised. Ten thousand
-- rows, each with its foreign-key checks, two index entries and a later update when
-- drained, cost an import more than its own contacts; one row costs it one of each.
-- The drain starts the runs of a batch's events one by one as it does for single
-- events (app.events_drain), over as many drains as it takes: drained_count says how
-- many of the row's events have had their runs started.
--
-- The payloads are JSON text, not jsonb: an import writes them once and a drain reads
-- them once, and only a drain with a trigger listening parses them. A row still holds
-- either one event's payload (payload) or a batch's (payloads), never both.
--
-- A batch row is marked drained only once all its events are (drained_count): the
-- previous release's drain, which knew one event a row, would otherwise take a batch
-- for one event with no payload and mark it drained, losing the rest, should it run
-- again during a rollout or after a rollback. The check makes such a drain fail and
-- roll back instead, so the batch waits for this release's drain.
alter table app.events alter column payload drop not null;
alter table app.events add column payloads json;
alter table app.events add column event_count integer not null default 1;
alter table app.events add column drained_count integer not null default 0;
-- One statement, so the outbox is scanned once to check them (it holds drained events
-- for events.keepSeconds, and every change that raises an event waits meanwhile).
alter table app.events
  add constraint events_payload_shape
    check ((payload is null) <> (payloads is null) and (payload is null or event_count = 1)),
  add constraint events_batch_shape
    check (case when payloads is null then true
                when json_typeof(payloads) <> 'array' then false
                else json_array_length(payloads) = event_count end),
  add constraint events_drained_count
    check (event_count > 0 and drained_count between 0 and event_count),
  add constraint events_batch_drained_whole
    check (payloads is null or drained_at is null or drained_count = event_count);

-- A batch's payloads run to megabytes: lz4 compresses them several times faster than
-- the default pglz, where the server has it; elsewhere they are stored as they are
-- rather than spend an import's time compressing them.
do $$
begin
  alter table app.events alter column payloads set compression lz4;
exception when feature_not_supported then
  alter table app.events alter column payloads set storage external;
end $$;
