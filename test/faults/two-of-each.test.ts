// Two API processes and two workers on one database, as a scaled deployment runs:
// schedule ticks racing from both workers and from plain connections fire each
// occurrence once; one webhook delivery sent many times at once through both APIs
// starts one run; and run starts and chat sends repeated with one Idempotency-Key
// across both APIs take effect once, every repeat answered with the first answer.
import t from 'tap'
import postgres from 'postgres'
import { acme } from '../lib/fixtures.ts'
import { pinClock } from '../lib/db.ts'
import { automationPath as path, deploy, inputlessDocument as document, mcpClient } from '../lib/automations.ts'
import { eventually } from '../lib/wait.ts'
import { agents, call, pooled, seededDatabase, spawnApi, spawnWorker } from './spawned-service.ts'

/** Repeats of one request sent at once, alternating between the two APIs. */
const REPEATS = 40
const SCHEDULES = 6
/** Ticks per minute: this many through the workers' tick task, as many again straight in SQL. */
const TICKS = 6

// Well after any real now: the workers' own crontab ticks (at the real minute) find
// nothing due, so every tick of a scheduled minute is one this test sends.
const START = Date.parse('2031-01-06T10:00:30Z')
const minute = (n: number) => Date.parse('2031-01-06T10:00:00Z') + n * 60_000

t.test('two APIs and two workers on one database', async (t) => {
  const began = performance.now()
  const { db, seeded } = await seededDatabase(t, acme())
  const keyOf = (email: string) => seeded.users[email]!.keys.main!
  const [dev, olive] = [keyOf('dev@acme.test'), keyOf('olive@acme.test')]
  // Budgets far above the repeats: this is about duplicates, not limits.
  const env = { RATE_LIMIT_SCALE: '100' }
  const [first, second] = await Promise.all([spawnApi(t, db, env), spawnApi(t, db, env), spawnWorker(t, db), spawnWorker(t, db)])
  const apis = [first!, second!]
  t.comment(`started after ${Math.round(performance.now() - began)} ms`)
  const connections = agents(t, 2, REPEATS / 2)
  const via = (i: number) => ({ agent: connections[i % 2]!, url: apis[i % 2]!.url })
  await pinClock(db.owner, START)

  const mcp = await mcpClient(t, apis[0]!.url, dev)
  const schedules = Array.from({ length: SCHEDULES }, (_, i) => `sched/s${i}`)
  for (const name of [...schedules, 'hook/h', 'start/once']) await deploy(mcp, document(name))
  t.comment(`deployed after ${Math.round(performance.now() - began)} ms`)

  t.test('each schedule fires once per minute, however many ticks race for it', async (t) => {
    for (const [i, name] of schedules.entries()) {
      const { agent, url } = via(i)
      const bound = await call(agent, url, 'PUT', `${path(name)}/triggers`, { key: dev, body: { kind: 'schedule', cron: '* * * * *' } })
      t.equal(bound.status, 200, `${name} is bound`)
    }
    const direct = postgres(db.url, { max: TICKS, onnotice: () => {} })
    t.teardown(() => direct.end())

    for (const n of [1, 2, 3]) {
      const at = new Date(minute(n))
      await pinClock(db.owner, at)
      // The tick task as the crontab enqueues it (its instant in _cron.ts), taken by
      // either worker, and the same tick straight from other connections, all at once.
      await Promise.all([
        ...Array.from({ length: TICKS }, () =>
          db.owner`select graphile_worker.add_job('schedule_tick'::text, ${JSON.stringify({ _cron: { ts: at.toISOString() } })}::json)`),
        ...Array.from({ length: TICKS }, () => direct`select app.schedule_tick(${at})`),
      ])
      const left = await eventually(() => db.owner<{ waiting: number; failed: number }[]>`
        select count(*)::int as waiting, count(*) filter (where j.last_error is not null)::int as failed
          from graphile_worker._private_jobs j join graphile_worker._private_tasks k on k.id = j.task_id
         where k.identifier = 'schedule_tick' and j.payload->'_cron'->>'ts' = ${at.toISOString()}`,
      ([row]) => row!.waiting === 0 || row!.failed > 0)
      t.equal(left[0]!.failed, 0, `no tick of minute ${n} failed`)
      // Once the ticks are gone from the queue the minute's runs are there; a loaded
      // machine has been seen to show them a moment later, so the count is read until
      // every schedule has its run (or 10 s pass). A second run of any schedule fails
      // at once, and so does the total below.
      const until = Date.now() + 10_000
      const fired = await eventually(() => db.owner<{ name: string; n: number }[]>`
        select automation_name as name, count(*)::int as n from app.runs
         where started_via = 'schedule' and (input->>'scheduledAt')::bigint = ${minute(n)}
         group by automation_name order by automation_name`,
      (rows) => rows.length >= schedules.length || rows.some((row) => row.n > 1) || Date.now() > until)
      t.same(fired, schedules.map((name) => ({ name, n: 1 })), `minute ${n}: one run per schedule`)
      if (fired.length < schedules.length) {
        t.comment(`minute ${n}: ${JSON.stringify(await db.owner`
          select automation_name, input, status, created_at from app.runs where started_via = 'schedule' order by created_at`)}`)
        t.comment(`triggers: ${JSON.stringify(await db.owner`
          select automation_id, next_due_at, due_through, last_skip_reason from app.automation_triggers where kind = 'schedule'`)}`)
      }
      const skipped = await db.owner`select last_skip_reason, last_skipped_at from app.automation_triggers where last_skipped_at is not null`
      t.same([...skipped], [], `minute ${n}: no occurrence was skipped`)
    }
    const [total] = await db.owner<{ n: number }[]>`select count(*)::int as n from app.runs where started_via = 'schedule'`
    t.equal(total!.n, 3 * SCHEDULES, 'and nothing else was started')

    // The workers run them, each once: two steps in each trace.
    const runs = await eventually(() => db.owner<{ status: string; steps: number }[]>`
      select status, jsonb_array_length(trace) as steps from app.runs where started_via = 'schedule'`,
    (rows) => rows.every((r) => !['queued', 'running'].includes(r.status)))
    t.same(runs.filter((r) => r.status !== 'completed' || r.steps !== 2), [], 'every run completed, each step run once')
  })

  t.test('one webhook delivery sent at once through both APIs starts one run', async (t) => {
    const bound = await call(connections[0]!, apis[0]!.url, 'PUT', `${path('hook/h')}/triggers`, { key: dev, body: { kind: 'webhook' } })
    t.equal(bound.status, 200)
    const hook = `/api/automations/webhook/${bound.body.token}`

    const byId = await pooled(REPEATS, REPEATS, (i) =>
      call(via(i).agent, via(i).url, 'POST', hook, { headers: { 'idempotency-key': 'delivery-1' }, body: { order: 1 } }))
    t.same(byId.filter((a) => a.status !== 202), [], 'every repeat is accepted')
    t.equal(new Set(byId.map((a) => a.body.runId)).size, 1, 'with one run')
    t.equal(byId.filter((a) => a.body.duplicate !== true).length, 1, 'one of them first, the rest duplicates')

    // Without a delivery id, identical bytes are the same delivery.
    const byBytes = await pooled(REPEATS, REPEATS, (i) =>
      call(via(i).agent, via(i).url, 'POST', hook, { body: { order: 2 } }))
    t.same(byBytes.filter((a) => a.status !== 202), [])
    t.equal(new Set(byBytes.map((a) => a.body.runId)).size, 1, 'identical bodies start one run')
    t.equal(byBytes.filter((a) => a.body.duplicate !== true).length, 1)

    const [runs] = await db.owner<{ n: number }[]>`select count(*)::int as n from app.runs where started_via = 'webhook'`
    t.equal(runs!.n, 2, 'two deliveries, two runs')
    const [deliveries] = await db.owner<{ n: number }[]>`select count(*)::int as n from app.webhook_deliveries`
    t.equal(deliveries!.n, 2, 'each remembered once')
  })

  t.test('a run start repeated with one Idempotency-Key across both APIs starts one run', async (t) => {
    // Three keys, their repeats interleaved.
    const answers = await pooled(3 * REPEATS, REPEATS, (i) =>
      call(via(i).agent, via(i).url, 'POST', `${path('start/once')}/runs`,
        { key: dev, headers: { 'idempotency-key': `start-${i % 3}` }, body: { input: { attempt: i } } }))
    t.same(answers.filter((a) => a.status !== 202), [], 'every repeat is accepted')
    for (const k of [0, 1, 2]) {
      const mine = answers.filter((_, i) => i % 3 === k)
      t.equal(new Set(mine.map((a) => JSON.stringify(a.body))).size, 1, `start-${k}: every repeat answers the same`)
    }
    const rows = await db.owner<{ key: string; n: number }[]>`
      select idempotency_key as key, count(*)::int as n from app.runs where automation_name = 'start/once'
       group by idempotency_key order by idempotency_key`
    t.same(rows, [{ key: 'start-0', n: 1 }, { key: 'start-1', n: 1 }, { key: 'start-2', n: 1 }], 'one run per key')
  })

  t.test('a chat send repeated with one Idempotency-Key across both APIs writes one message', async (t) => {
    const thread = await call(connections[0]!, apis[0]!.url, 'POST', '/api/v1/threads', { key: olive, body: {} })
    t.equal(thread.status, 201)
    const answers = await pooled(REPEATS, REPEATS, (i) =>
      call(via(i).agent, via(i).url, 'POST', `/api/v1/threads/${thread.body.id}/messages`,
        { key: olive, headers: { 'idempotency-key': 'send-1' }, body: { content: `hello ${i}`, model: 'local-echo' } }))
    t.same(answers.filter((a) => a.status !== 202), [], 'every repeat is accepted')
    t.equal(new Set(answers.map((a) => JSON.stringify(a.body))).size, 1, 'and answered with the first send')
    const [messages] = await db.owner<{ sent: number; replies: number }[]>`
      select count(*) filter (where role = 'user')::int as sent, count(*) filter (where role = 'assistant')::int as replies
        from app.thread_messages where thread_id = ${thread.body.id}`
    t.same(messages, { sent: 1, replies: 1 }, 'one message, one answer')
    const reply = await eventually(() => db.owner<{ status: string }[]>`
      select status from app.thread_messages where thread_id = ${thread.body.id} and role = 'assistant'`,
    ([row]) => !['pending', 'streaming'].includes(row!.status))
    t.equal(reply[0]!.status, 'complete', 'which a worker writes')
  })
})
