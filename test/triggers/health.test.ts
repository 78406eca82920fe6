// Trigger health, kept by SQL when a trigger-started run ends: counted failures add
// up and pause a schedule at five (audit row, one notification per active Owner and
// Admin); a success resets the count unless the schedule is paused; other failures
// move nothing; webhook and event bindings count but never pause; a PUT clears it.
import t from 'tap'
import { createHash } from 'node:crypto'
import { world, type World } from '../lib/world.ts'
import { deploy, waitForRun } from '../lib/automations.ts'
import { acme, person } from '../lib/fixtures.ts'
import { pinClock } from '../lib/db.ts'

const ms = (iso: string) => Date.parse(iso)
const minute = (n: number) => ms('2025-06-02T10:00:00Z') + n * 60_000

const passing = (name: string) => ({
  name,
  steps: [
    { slug: 'mark', type: 'set', config: { values: { ok: true } }, next: { success: 'end' } },
    { slug: 'end', type: 'output', config: { mapping: { ok: '{{ steps.mark.output.ok }}' } } },
  ],
})

// Nothing listens on port 1 of loopback: the http step fails with connector_error.
const failing = (name: string) => ({
  name,
  steps: [
    { slug: 'call', type: 'http', config: { url: 'http://127.0.0.1:1/hook' }, next: { success: 'end' } },
    { slug: 'end', type: 'output', config: { mapping: {} } },
  ],
})

const path = (name: string) => `/api/v1/automations/${name.replace('/', '__')}/triggers`

async function bound(w: World, document: { name: string }, body: Record<string, unknown>) {
  await deploy(await w.dev.mcp(), document)
  const put = await w.dev.put(path(document.name), body)
  if (put.status !== 200) throw new Error(`binding ${document.name} failed: ${put.status} ${put.text}`)
  return put.body as { token?: string }
}

const summary = async (w: World, name: string) => (await w.dev.get(path(name))).body.triggers[0]

const tick = async (w: World, at: number) => {
  await pinClock(w.service.db.owner, at)
  return (await w.service.db.owner<{ n: number }[]>`select app.schedule_tick(${new Date(at)}) as n`)[0]!.n
}

// Runs of the automation, oldest first.
const runIds = async (w: World, name: string) => (await w.service.db.owner<{ id: string }[]>`
  select id from app.runs where automation_name = ${name} order by created_at, id`).map((r) => r.id)

// A run ending as the engine would end it, written as the owner.
const end = (w: World, id: string, status: 'completed' | 'failed', code: string | null = null) => w.service.db.owner`
  update app.runs set status = ${status}, failure_code = ${code}, finished_at = app.now(), updated_at = app.now() where id = ${id}`

// A schedule with `count` queued runs, one per minute from minute 1 (no worker).
async function scheduleWithRuns(w: World, name: string, count: number): Promise<string[]> {
  await pinClock(w.service.db.owner, minute(0) + 30_000)
  await bound(w, passing(name), { kind: 'schedule', cron: '* * * * *' })
  for (let i = 1; i <= count; i++) if (await tick(w, minute(i)) !== 1) throw new Error(`no run at minute ${i}`)
  return runIds(w, name)
}

t.test('five counted failures of real runs pause a schedule, with an audit row and one notification per active owner and admin', async (t) => {
  const w = await world(t, {
    worker: true,
    seed: { users: [...acme().users!, person('ada@acme.test', [{ org: 'acme', role: 'admin', disabled: true }])] },
  })
  await pinClock(w.service.db.owner, minute(0) + 30_000)
  await bound(w, failing('health/flaky'), { kind: 'schedule', cron: '* * * * *' })
  const failed: string[] = []
  for (let i = 1; i <= 5; i++) {
    t.equal(await tick(w, minute(i)), 1, `minute ${i} starts a run`)
    const [id] = (await runIds(w, 'health/flaky')).slice(-1)
    const run = await waitForRun(w.olive.get, id!)
    t.match(run, { status: 'failed', failureCode: 'connector_error', startedVia: 'schedule' })
    failed.push(id!)
    const state = await summary(w, 'health/flaky')
    if (i < 5) t.match(state, { enabled: true, consecutiveFailures: i, lastSkipReason: null }, `${i} failures, still on`)
  }
  t.match(await summary(w, 'health/flaky'), {
    enabled: false, lastSkipReason: 'paused_after_failures', lastSkippedAt: minute(5),
    consecutiveFailures: 5, lastFailureCode: 'connector_error', lastFailedRunId: failed[4], lastFailedAt: Number,
  })
  t.equal(await tick(w, minute(6)), 0, 'a paused schedule starts nothing')

  const audit = await w.service.db.owner<{ subject_id: string; data: any }[]>`
    select subject_id, data from app.audit_log where action = 'automation.trigger.paused'`
  const [automation] = await w.service.db.owner<{ id: string }[]>`select id from app.automations where name = 'health/flaky'`
  t.equal(audit.length, 1, 'one audit row')
  t.match(audit[0], { subject_id: automation!.id, data: { automation: 'health/flaky', failures: 5, lastFailureCode: 'connector_error', lastFailedRunId: failed[4] } })

  const notified = await w.service.db.owner<{ email: string; kind: string; params: any }[]>`
    select u.email, n.kind, n.params from app.notifications n join app.users u on u.id = n.recipient_id order by u.email`
  t.same(notified.map((n) => n.email), ['adam@acme.test', 'olive@acme.test'], 'the owner and the active admin, once each; not the disabled admin')
  t.ok(notified.every((n) => n.kind === 'automation.trigger.paused' && n.params.automation === 'health/flaky'))
})

t.test('a success resets the count', async (t) => {
  const w = await world(t)
  const [a, b, c, d] = await scheduleWithRuns(w, 'health/reset', 4)
  await end(w, a!, 'failed', 'node_error')
  await end(w, b!, 'failed', 'connector_error')
  t.match(await summary(w, 'health/reset'), { consecutiveFailures: 2, lastFailureCode: 'connector_error', lastFailedRunId: b })
  await end(w, c!, 'completed')
  t.match(await summary(w, 'health/reset'), { consecutiveFailures: 0, enabled: true })
  await end(w, d!, 'failed', 'auth_error')
  t.match(await summary(w, 'health/reset'), { consecutiveFailures: 1, lastFailureCode: 'auth_error', lastFailedRunId: d })
})

t.test('a success does not reset the count of a schedule already paused', async (t) => {
  const w = await world(t)
  const runs = await scheduleWithRuns(w, 'health/paused', 6)
  for (const id of runs.slice(0, 5)) await end(w, id, 'failed', 'connector_error')
  t.match(await summary(w, 'health/paused'), { enabled: false, consecutiveFailures: 5, lastSkipReason: 'paused_after_failures' })
  await end(w, runs[5]!, 'completed')
  t.match(await summary(w, 'health/paused'), { enabled: false, consecutiveFailures: 5, lastSkipReason: 'paused_after_failures' },
    'the run started before the pause succeeded; the schedule stays paused with its count')
})

t.test('a failure that is not counted (timeout, input_invalid) neither counts nor resets', async (t) => {
  const w = await world(t)
  const [a, b, c, d, e] = await scheduleWithRuns(w, 'health/uncounted', 5)
  await end(w, a!, 'failed', 'connector_error')
  await end(w, b!, 'failed', 'connector_error')
  await end(w, c!, 'failed', 'timeout')
  await end(w, d!, 'failed', 'input_invalid')
  t.match(await summary(w, 'health/uncounted'), { consecutiveFailures: 2, lastFailureCode: 'connector_error', lastFailedRunId: b })
  await end(w, e!, 'failed', 'connector_error')
  t.match(await summary(w, 'health/uncounted'), { consecutiveFailures: 3 }, 'the count went on from where it was')
})

t.test('PUT re-enabling a paused schedule clears its count and its skip', async (t) => {
  const w = await world(t)
  const runs = await scheduleWithRuns(w, 'health/revived', 5)
  for (const id of runs) await end(w, id, 'failed', 'connector_error')
  t.match(await summary(w, 'health/revived'), { enabled: false, consecutiveFailures: 5 })
  const put = await w.dev.put(path('health/revived'), { kind: 'schedule', cron: '* * * * *' })
  t.equal(put.status, 200)
  t.match(put.body.trigger, { enabled: true, consecutiveFailures: 0, lastSkipReason: null, lastSkippedAt: null })
  t.equal(await tick(w, minute(7)), 1, 'the schedule fires again')
})

// Delivers to a webhook as the server does: a first call hands back the inputs to
// check, the second carries the check.
async function deliver(w: World, token: string, n: number): Promise<string> {
  const body = JSON.stringify({ n })
  const args = {
    tokenHash: createHash('sha256').update(token).digest('hex'), projectId: null, deliveryId: null,
    bodyHash: createHash('sha256').update(body).digest('hex'), payload: { n },
    senderBucket: { key: 'webhook-sender:127.0.0.1', perMinute: 1000, burst: 1000 },
    triggerBudget: { perMinute: 1000, burst: 1000 }, validated: null as unknown,
  }
  const call = async () => (await w.service.db.owner<{ answer: any }[]>`
    select app.webhook_deliver(${w.service.db.owner.json(args as never)}) as answer`)[0]!.answer
  let answer = await call()
  if (answer.revalidate) {
    args.validated = { automationId: answer.revalidate.automationId, version: answer.revalidate.version, issues: [] }
    answer = await call()
  }
  if (answer.status !== 202) throw new Error(JSON.stringify(answer))
  return answer.body.runId
}

t.test('webhook and event bindings count failures and never pause', async (t) => {
  const w = await world(t)
  const { token } = await bound(w, passing('health/hook'), { kind: 'webhook' })
  const hookRuns: string[] = []
  for (let n = 1; n <= 6; n++) hookRuns.push(await deliver(w, token!, n))
  const hookRun = (await w.olive.get(`/api/v1/runs/${hookRuns[0]}`)).body
  t.match(hookRun, { startedVia: 'webhook', startedBy: /^trigger:/ })
  for (const id of hookRuns) await end(w, id, 'failed', 'connector_error')
  t.match(await summary(w, 'health/hook'), { kind: 'webhook', enabled: true, consecutiveFailures: 6, lastSkipReason: null })

  await bound(w, passing('health/listener'), { kind: 'event', event: 'project.created' })
  for (let n = 1; n <= 6; n++) {
    if ((await w.olive.post('/api/v1/projects', { name: `Listened ${n}` })).status !== 201) throw new Error('project not created')
  }
  await w.service.db.owner`select app.events_drain(100)`
  const eventRuns = await runIds(w, 'health/listener')
  t.equal(eventRuns.length, 6)
  for (const id of eventRuns) await end(w, id, 'failed', 'node_error')
  t.match(await summary(w, 'health/listener'), { kind: 'event', enabled: true, consecutiveFailures: 6, lastSkipReason: null })

  const [paused] = await w.service.db.owner<{ n: number }[]>`
    select count(*)::int as n from app.audit_log where action = 'automation.trigger.paused'`
  t.equal(paused!.n, 0, 'no pause was written')
})
