// Event triggers: a platform event is written to the outbox with the change that
// raises it and drained by the worker into runs, each event once, none lost, however
// many drains run at once.
import t from 'tap'
import postgres from 'postgres'
import type { JobHelpers } from 'graphile-worker'
import { world, type World } from '../lib/world.ts'
import { deploy, waitForRun } from '../lib/automations.ts'
import { eventually } from '../lib/wait.ts'
import { drainEvents, DRAIN_BATCH } from '../../jobs/tasks/drain-events.ts'
import { requestPool, type Sql } from '../../server/core/db/connection.ts'
import { asCaller } from '../lib/caller.ts'

// Takes no inputs, so every trigger start is accepted.
const document = (name: string) => ({
  name,
  steps: [
    { slug: 'seen', type: 'set', config: { values: { event: '{{ input.event }}' } }, next: { success: 'end' } },
    { slug: 'end', type: 'output', config: { mapping: { event: '{{ steps.seen.output.event }}' } } },
  ],
})

async function listening(w: World, name: string) {
  await deploy(await w.dev.mcp(), document(name))
  const put = await w.dev.put(`/api/v1/automations/${name.replace('/', '__')}/triggers`, { kind: 'event', event: 'project.created' })
  if (put.status !== 200) throw new Error(`binding ${name} failed: ${put.status} ${put.text}`)
}

const runsOf = async (w: World, name: string) => (await w.service.db.owner<{ id: string; input: any; trigger_id: string; started_via: string }[]>`
  select id, input, trigger_id, started_via from app.runs where automation_name = ${name} order by created_at, id`)

const pending = async (w: World) => (await w.service.db.owner<{ n: number }[]>`
  select count(*)::int as n from app.events where drained_at is null`)[0]!.n

async function createProjects(w: World, prefix: string, count: number): Promise<string[]> {
  const ids: string[] = []
  for (let i = 1; i <= count; i++) {
    const created = await w.olive.post('/api/v1/projects', { name: `${prefix} ${i}` })
    if (created.status !== 201) throw new Error(created.text)
    ids.push(created.body.project.id)
  }
  return ids
}

t.test('a project creation starts the event trigger\'s run through the worker', async (t) => {
  const w = await world(t, { worker: true })
  await listening(w, 'events/welcome')
  const created = await w.olive.post('/api/v1/projects', { name: 'Gamma', description: 'new' })
  t.equal(created.status, 201)

  const [started] = await eventually(() => runsOf(w, 'events/welcome'), (runs) => runs.length > 0)
  const run = await waitForRun(w.olive.get, started!.id)
  const [trigger] = await w.service.db.owner<{ id: string }[]>`select id from app.automation_triggers`
  const [olive] = await w.service.db.owner<{ id: string }[]>`select id from app.users where email = 'olive@acme.test'`
  t.match(run, { status: 'completed', startedBy: `trigger:${trigger!.id}`, startedVia: 'event', output: { event: 'project.created' } })
  t.same(run.input, { trigger: 'event', event: 'project.created', payload: { project: created.body.project, createdBy: olive!.id } },
    'the run input carries the event and the project as the creation answered it')
  t.equal(await pending(w), 0, 'the outbox is drained')
  const summary = (await w.dev.get('/api/v1/automations/events__welcome/triggers')).body.triggers[0]
  t.match(summary, { kind: 'event', event: 'project.created', lastRunId: started!.id, lastFiredAt: Number })
  t.equal((await runsOf(w, 'events/welcome')).length, 1, 'one event, one run')
})

t.test('a project creation nobody listens to is on record and wakes no drain; the periodic drain passes it by', async (t) => {
  const w = await world(t)
  await w.service.db.owner`update app.events set drained_at = now()`
  await createProjects(w, 'Quiet', 1)
  const [event] = await w.service.db.owner<{ name: string; drained: boolean }[]>`
    select name, drained_at is not null as drained from app.events where payload->'project'->>'name' = 'Quiet 1'`
  t.same(event, { name: 'project.created', drained: false }, 'pending: whether a binding listens is the drain\'s to decide')
  const [jobs] = await w.service.db.owner<{ n: number }[]>`
    select count(*)::int as n from graphile_worker.jobs where task_identifier = 'drain_events'`
  t.equal(jobs!.n, 0, 'no drain is woken for it')
  const [drained] = await w.service.db.owner<{ n: number }[]>`select app.events_drain(100) as n`
  t.equal(drained!.n, 1, 'the every-minute drain takes it')
  t.equal(await pending(w), 0)
  const [runs] = await w.service.db.owner<{ n: number }[]>`select count(*)::int as n from app.runs`
  t.equal(runs!.n, 0, 'and starts nothing')
})

t.test('an event raised while a binding is being made is not decided by what its transaction saw', async (t) => {
  const w = await world(t)
  await w.service.db.owner`update app.events set drained_at = now()`
  await deploy(await w.dev.mcp(), document('events/late'))
  // The binding's transaction began (bound_at) before the creation, and commits after it.
  const [org] = await w.service.db.owner<{ id: string }[]>`select id from app.organizations where slug = 'acme'`
  const [automation] = await w.service.db.owner<{ id: string }[]>`select id from app.automations where name = 'events/late'`
  let created = ''
  await w.service.db.owner.begin(async (tx) => {
    await tx`insert into app.automation_triggers (organization_id, automation_id, kind, event, bound_at)
             values (${org!.id}, ${automation!.id}, 'event', 'project.created', now() - interval '1 second')`
    // The creation commits while the binding is still uncommitted: it cannot see it.
    created = (await createProjects(w, 'Raced', 1))[0]!
  })
  await w.service.db.owner`select app.events_drain(100)`
  const runs = await runsOf(w, 'events/late')
  t.equal(runs.length, 1, 'the drain started it')
  t.equal(runs[0]!.input.payload.project.id, created)
})

t.test('two drains racing start every event once, losing none', async (t) => {
  const w = await world(t)
  await listening(w, 'events/audit')
  const other = postgres(w.service.db.url, { max: 1, onnotice: () => {} })
  t.teardown(() => other.end())
  const drainOn = async (sql: postgres.Sql | postgres.TransactionSql, batch: number) =>
    (await sql<{ n: number }[]>`select app.events_drain(${batch}) as n`)[0]!.n

  await w.service.db.owner`update app.events set drained_at = now()` // the world's own creations
  const first = await createProjects(w, 'First', 12)
  t.equal(await pending(w), 12, 'each creation waits in the outbox')
  // A drain that has taken five events and not committed yet: the other drain passes
  // them by and takes the rest, and they are still there once the first lets go.
  const alongside = await w.service.db.owner.begin(async (tx) => {
    await tx`select id from app.events where drained_at is null order by id limit 5 for update`
    return drainOn(other, 100)
  })
  t.equal(alongside, 7, 'the concurrent drain takes the rest, not the held ones')
  t.equal(await drainOn(other, 100), 5, 'the held events are drained once released')
  t.equal(await drainOn(w.service.db.owner, 100), 0)

  // Free races, one event at a time on each connection.
  const second = await createProjects(w, 'Second', 12)
  const loop = async (sql: postgres.Sql) => {
    let n = 0
    for (let got = await drainOn(sql, 1); got > 0; got = await drainOn(sql, 1)) n += got
    return n
  }
  const [a, b] = await Promise.all([loop(w.service.db.owner), loop(other)])
  t.equal(a + b, 12)
  t.equal(await pending(w), 0)

  const runs = await runsOf(w, 'events/audit')
  const started = runs.map((r) => r.input.payload.project.id).sort()
  t.same(started, [...first, ...second].sort(), 'one run per event, for every event')
  t.ok(runs.every((r) => r.started_via === 'event' && r.input.event === 'project.created'))
})

t.test('the drain task drains batch after batch until the outbox is empty', async (t) => {
  const w = await world(t)
  await listening(w, 'events/bulk')
  const count = DRAIN_BATCH * 2 + 7
  await w.service.db.owner`update app.events set drained_at = now()` // the world's own creations
  await w.service.db.owner`
    select app.raise_event(o.id, 'project.created', jsonb_build_object('n', g))
      from app.organizations o, generate_series(1, ${count}) g where o.slug = 'acme'`
  t.equal(await pending(w), count)
  const helpers = {
    query: async (text: string, values: unknown[] = []) => ({ rows: await w.service.db.owner.unsafe(text, values as never[]) }),
    logger: { debug() {}, info() {}, warn() {}, error() {} },
  } as unknown as JobHelpers
  await drainEvents({}, helpers)
  t.equal(await pending(w), 0)
  const runs = await runsOf(w, 'events/bulk')
  t.equal(runs.length, count)
  t.equal(new Set(runs.map((r) => r.input.payload.n)).size, count, 'each event once')
})

// An operation that raises many events of one name (a contact import) writes them as
// one outbox row (db/schema/0031_event_batches.sql); the drain starts them one by one.
const raiseBatch = async (w: World, name: string, payloads: unknown[]) => (await w.service.db.owner<{ id: string }[]>`
  insert into app.events (organization_id, name, payloads, event_count)
  select o.id, ${name}, ${JSON.stringify(payloads)}::text::json, ${payloads.length} from app.organizations o where o.slug = 'acme'
  returning id`)[0]!.id
const progress = async (w: World, id: string) => (await w.service.db.owner<{ drained_count: number; drained: boolean }[]>`
  select drained_count, drained_at is not null as drained from app.events where id = ${id}`)[0]!
const drain = async (sql: postgres.Sql, batch: number) => (await sql<{ n: number }[]>`select app.events_drain(${batch}) as n`)[0]!.n

t.test('a batch\'s events start their runs in order, as many per drain as it has room for, before the events raised after it', async (t) => {
  const w = await world(t)
  await listening(w, 'events/batch')
  await w.service.db.owner`update app.events set drained_at = now()` // the world's own creations
  const batch = await raiseBatch(w, 'project.created', Array.from({ length: 7 }, (_, i) => ({ n: i + 1 })))
  await w.service.db.owner`
    select app.raise_event(o.id, 'project.created', '{"n": 8}') from app.organizations o where o.slug = 'acme'`

  // The runs each drain started, by the n of their events.
  const seen = new Set<number>()
  const started = async () => {
    const fresh = (await runsOf(w, 'events/batch')).map((r) => r.input.payload.n as number).filter((n) => !seen.has(n))
    fresh.forEach((n) => seen.add(n))
    return fresh.sort((a, b) => a - b)
  }
  t.equal(await drain(w.service.db.owner, 1), 1, 'a drain of one takes the batch\'s first event')
  t.same(await started(), [1])
  t.equal(await drain(w.service.db.owner, 1), 1)
  t.same(await started(), [2], 'then its second')
  t.equal(await drain(w.service.db.owner, 3), 3, 'a drain of three takes the next three')
  t.same(await started(), [3, 4, 5])
  t.same(await progress(w, batch), { drained_count: 5, drained: false }, 'the batch waits for the rest')
  t.equal(await drain(w.service.db.owner, 1), 1)
  t.same(await started(), [6])
  t.equal(await drain(w.service.db.owner, 3), 2)
  t.same(await started(), [7, 8], 'the batch\'s last event, then the single event raised after it')
  t.same(await progress(w, batch), { drained_count: 7, drained: true })
  t.equal(await drain(w.service.db.owner, 3), 0)
  t.equal(await pending(w), 0)
  const runs = await runsOf(w, 'events/batch')
  t.equal(runs.length, 8, 'one run per event')
  t.ok(runs.every((r) => r.input.event === 'project.created' && r.started_via === 'event'))
})

t.test('a batch nobody listens to is drained whole at once, and its events can be read one by one', async (t) => {
  const w = await world(t)
  await listening(w, 'events/projects') // hears project.created, not task.created
  await w.service.db.owner`update app.events set drained_at = now()`
  const batch = await raiseBatch(w, 'task.created', Array.from({ length: 5 }, (_, i) => ({ n: i + 1 })))
  const [events] = await w.service.db.owner<{ positions: number[]; ns: number[] }[]>`
    select array_agg(p.event_position order by p.event_position) as positions,
           array_agg((p.payload->>'n')::int order by p.event_position) as ns
      from app.events e cross join app.event_payloads(e, 1, 3) p where e.id = ${batch}`
  t.same(events, { positions: [2, 3, 4], ns: [2, 3, 4] }, 'app.event_payloads skips and takes in raise order')
  t.equal(await drain(w.service.db.owner, 2), 5, 'all five drained by a drain of two: no run to start')
  t.same(await progress(w, batch), { drained_count: 5, drained: true })
  t.equal((await runsOf(w, 'events/projects')).length, 0)
})

t.test('a drain takes up a batch where another drain left it, and passes it by while another holds it', async (t) => {
  const w = await world(t)
  await listening(w, 'events/relay')
  await w.service.db.owner`update app.events set drained_at = now()`
  const other = postgres(w.service.db.url, { max: 1, onnotice: () => {} })
  t.teardown(() => other.end())
  const batch = await raiseBatch(w, 'project.created', Array.from({ length: 6 }, (_, i) => ({ n: i + 1 })))
  const ns = async () => (await runsOf(w, 'events/relay')).map((r) => r.input.payload.n as number).sort((a, b) => a - b)
  t.equal(await drain(w.service.db.owner, 2), 2)
  t.equal(await drain(other, 2), 2, 'the other connection\'s drain')
  t.same(await ns(), [1, 2, 3, 4], 'takes up the batch after the first two')
  await w.service.db.owner`select app.raise_event(o.id, 'project.created', '{"n": 7}') from app.organizations o where o.slug = 'acme'`
  const passed = await w.service.db.owner.begin(async (tx) => {
    await tx`select id from app.events where id = ${batch} for update`
    return drain(other, 10)
  })
  t.equal(passed, 1, 'a drain meanwhile passes the held batch by and starts the later event')
  t.same(await ns(), [1, 2, 3, 4, 7])
  t.equal(await drain(other, 10), 2, 'the batch\'s rest once released')
  t.same(await ns(), [1, 2, 3, 4, 5, 6, 7])
  t.same(await progress(w, batch), { drained_count: 6, drained: true })
})

t.test('an event of a batch whose payload cannot be read is refused alone', async (t) => {
  const w = await world(t)
  await listening(w, 'events/unreadable')
  await w.service.db.owner`update app.events set drained_at = now()`
  // Valid JSON that jsonb refuses (a NUL in a string), as only a direct write could make.
  const [acme] = await w.service.db.owner<{ id: string }[]>`select id from app.organizations where slug = 'acme'`
  const [row] = await w.service.db.owner<{ id: string }[]>`
    insert into app.events (organization_id, name, payloads, event_count)
    values (${acme!.id}, 'project.created', ${'[{"n": 1}, {"n": "\\u0000"}, {"n": 3}]'}::text::json, 3) returning id`
  t.equal(await drain(w.service.db.owner, 10), 3)
  t.same((await runsOf(w, 'events/unreadable')).map((r) => r.input.payload.n).sort(), [1, 3], 'the readable events start their runs')
  t.same(await progress(w, row!.id), { drained_count: 3, drained: true }, 'the row is drained, not left to block the outbox')
  const [binding] = await w.service.db.owner<{ last_skip_reason: string }[]>`select last_skip_reason from app.automation_triggers`
  t.equal(binding!.last_skip_reason, 'start_refused', 'the unreadable event is recorded on the binding')
})

t.test('two drains racing over a batch start each of its events once', async (t) => {
  const w = await world(t)
  await listening(w, 'events/race')
  await w.service.db.owner`update app.events set drained_at = now()`
  const other = postgres(w.service.db.url, { max: 1, onnotice: () => {} })
  t.teardown(() => other.end())
  await raiseBatch(w, 'project.created', Array.from({ length: 12 }, (_, i) => ({ n: i + 1 })))
  const loop = async (sql: postgres.Sql) => {
    let n = 0
    for (let got = await drain(sql, 2); got > 0; got = await drain(sql, 2)) n += got
    return n
  }
  // Until the batch is drained, whichever drain holds it is the only one taking from it.
  let total = 0
  while (await pending(w) > 0) total += (await Promise.all([loop(w.service.db.owner), loop(other)])).reduce((a, b) => a + b)
  t.equal(total, 12)
  const ns = (await runsOf(w, 'events/race')).map((r) => r.input.payload.n)
  t.same([...ns].sort((a, b) => a - b), Array.from({ length: 12 }, (_, i) => i + 1), 'every event once')
})

t.test('a request can raise a batch only undrained, of one shape', async (t) => {
  const w = await world(t)
  const [acme] = await w.service.db.owner<{ id: string }[]>`select id from app.organizations where slug = 'acme'`
  const [olive] = await w.service.db.owner<{ id: string }[]>`select id from app.users where email = 'olive@acme.test'`
  const requests = requestPool(w.service.db.url, 1)
  t.teardown(() => requests.end())
  const state = (work: (sql: Sql) => Promise<unknown>) =>
    asCaller(requests, { userId: olive!.id, orgId: acme!.id, role: 'owner' }, work).then(() => 'inserted', (error) => error.code as string)
  t.equal(await state((sql) => sql`insert into app.events (organization_id, name, payloads, event_count)
    values (${acme!.id}, 'project.created', '[{}, {}]', 2)`), 'inserted', 'an undrained batch')
  t.equal(await state((sql) => sql`insert into app.events (organization_id, name, payloads, event_count, drained_count)
    values (${acme!.id}, 'project.created', '[{}, {}]', 2, 1)`), '42501', 'a batch passed as partly drained is refused by the policy')
  t.equal(await state((sql) => sql`insert into app.events (organization_id, name, payload, payloads, event_count)
    values (${acme!.id}, 'project.created', '{}', '[{}]', 1)`), '23514', 'one event and a batch in one row')
  t.equal(await state((sql) => sql`insert into app.events (organization_id, name, payloads, event_count)
    values (${acme!.id}, 'project.created', '{}', 1)`), '23514', 'a batch that is not a list')
  t.equal(await state((sql) => sql`insert into app.events (organization_id, name, payload, event_count)
    values (${acme!.id}, 'project.created', '{}', 2)`), '23514', 'one event counted as two')
  t.equal(await state((sql) => sql`insert into app.events (organization_id, name, payloads, event_count)
    values (${acme!.id}, 'project.created', '[{}, {}]', 3)`), '23514', 'a batch counted as more than it holds')
  t.equal(await state((sql) => sql`insert into app.events (organization_id, name, payloads, event_count)
    values (${acme!.id}, 'project.created', '[{}, {}]', 1)`), '23514', 'a batch counted as less than it holds')
})

t.test('a batch is drained only with all its events, whoever marks it', async (t) => {
  const w = await world(t)
  const batch = await raiseBatch(w, 'project.created', [{ n: 1 }, { n: 2 }])
  // What the drain of the release before batches did with every row it took.
  const code = await w.service.db.owner`update app.events set drained_at = now() where id = ${batch}`.then(() => 'updated', (error) => error.code)
  t.equal(code, '23514', 'marking a batch drained with its events unstarted is refused')
  t.same(await progress(w, batch), { drained_count: 0, drained: false }, 'the batch waits for a drain that knows batches')
})
