// PostgreSQL restarted under mixed load (reads, writes, webhook deliveries, run
// starts) against an API process and a worker process: both recover without a
// restart of their own, every 5xx answer falls in the outage and carries the error
// envelope, every accepted delivery and run start has its run, and the runs settle.
// The cluster is the test's own (test/faults/private-cluster.ts).
import t from 'tap'
import { deploy, mcpClient } from '../lib/automations.ts'
import { ownerPool } from '../../server/core/db/connection.ts'
import { seed } from '../../server/admin/operations.ts'
import { entry, message, spawnMain, type Spawned } from '../ops/process.ts'
import { privateCluster } from './private-cluster.ts'

/** How long the database stays down. */
const OUTAGE_MS = 3_000
/** Generous bounds for a shared, loaded machine: polls, not sleeps. */
const RECOVERY_DEADLINE_MS = 60_000
const SETTLE_DEADLINE_MS = 60_000
const LOAD_LOOPS = 4

type Kind = 'read' | 'write' | 'webhook' | 'start'
interface Exchange { kind: Kind; startedAt: number; endedAt: number; status: number; body: any; deliveryId?: string; failure?: string }

t.test('a PostgreSQL restart under mixed load: the service recovers on its own and loses nothing', async (t) => {
  const cluster = await privateCluster()
  t.teardown(() => cluster.destroy())

  const processes: Spawned[] = []
  t.teardown(async () => {
    for (const child of processes) child.child.kill('SIGKILL')
    await Promise.all(processes.map((child) => child.closed))
  })
  const env = { DATABASE_URL: cluster.url, S3_ENDPOINT: 'none', PORT: '0', RATE_LIMIT_SCALE: '100', LOG_LEVEL: 'info' }
  const api = spawnMain(['api'], env)
  processes.push(api)
  const listening = entry(await api.line(message('listening')))!
  const base = `http://127.0.0.1:${listening.port}`

  const owner = ownerPool(cluster.url, 2)
  t.teardown(() => owner.end({ timeout: 5 }))
  const seeded = await seed(owner, {
    organizations: [{ slug: 'fault', name: 'Fault', skillSharingPolicy: null }],
    users: [{ email: 'dev@fault.test', name: 'Dev', password: null, emailVerified: true,
              memberships: [{ org: 'fault', role: 'owner', disabled: false }], keys: [{ name: 'main', expiresAt: null }] }],
    teams: [], projects: [], providers: [], models: [], secrets: [], grants: [],
  })
  const key = seeded.users['dev@fault.test']!.keys.main!
  const call = async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => {
    const response = await fetch(`${base}${path}`, {
      method, headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...headers },
      body: body === undefined ? undefined : JSON.stringify(body), signal: AbortSignal.timeout(60_000),
    })
    const text = await response.text()
    let parsed: unknown = text
    try { parsed = JSON.parse(text) } catch { /* not JSON: kept as text */ }
    return { status: response.status, body: parsed as any }
  }

  await deploy(await mcpClient(t, base, key), {
    name: 'faults/restart',
    steps: [
      { slug: 'note', type: 'set', config: { values: { seen: true } }, next: { success: 'end' } },
      { slug: 'end', type: 'output', config: { mapping: { done: true } } },
    ],
  })
  const bound = await call('PUT', '/api/v1/automations/faults__restart/triggers', { kind: 'webhook' })
  t.equal(bound.status, 200, 'the webhook is bound')
  const webhook = `/api/automations/webhook/${bound.body.token}`

  const worker = spawnMain(['worker'], env)
  processes.push(worker)
  await worker.line(message('worker started'))

  // The load: each loop sends one request after another, of a kind drawn in turn.
  const exchanges: Exchange[] = []
  let loading = true
  let sequence = 0
  const kinds: Kind[] = ['read', 'write', 'webhook', 'start']
  const send = async (kind: Kind): Promise<Exchange> => {
    const n = sequence++
    const startedAt = Date.now()
    const deliveryId = kind === 'webhook' ? `delivery-${n}` : undefined
    try {
      const answer = kind === 'read' ? await call('GET', '/api/v1/automations/faults__restart/runs?limit=5')
        : kind === 'write' ? await call('POST', '/api/v1/projects', { name: `Load ${n}` })
          : kind === 'webhook' ? await call('POST', webhook, { n }, { 'idempotency-key': deliveryId! })
            : await call('POST', '/api/v1/automations/faults__restart/runs', {})
      return { kind, startedAt, endedAt: Date.now(), ...answer, deliveryId }
    } catch (error) {
      return { kind, startedAt, endedAt: Date.now(), status: 0, body: null, deliveryId, failure: (error as Error).message }
    }
  }
  const loops = Array.from({ length: LOAD_LOOPS }, async (_, loop) => {
    for (let i = loop; loading; i++) exchanges.push(await send(kinds[i % kinds.length]!))
  })
  const answered = (count: number) => new Promise<void>((resolve) => {
    const target = exchanges.length + count
    const check = setInterval(() => { if (exchanges.length >= target || !loading) { clearInterval(check); resolve() } }, 50)
  })

  await answered(20)
  const stoppingAt = Date.now()
  await cluster.stop()
  const health = await call('GET', '/api/health')
  t.equal(health.status, 503, '/api/health answers 503 while the database is down')
  t.same(health.body, { status: 'unavailable' })
  await new Promise((resolve) => setTimeout(resolve, OUTAGE_MS))
  await cluster.start()
  const startedAt = Date.now()

  // Recovered: /api/health answers 200 again, polled.
  let recoveredAt = 0
  while (Date.now() - startedAt < RECOVERY_DEADLINE_MS) {
    if ((await call('GET', '/api/health')).status === 200) {
      recoveredAt = Date.now()
      break
    }
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  t.ok(recoveredAt > 0, '/api/health answers 200 again after the restart')
  t.comment(`down ${startedAt - stoppingAt} ms; recovered ${recoveredAt - startedAt} ms after the start`)
  // The load goes on after the recovery, long enough to show nothing fails any more.
  await answered(40)
  loading = false
  await Promise.all(loops)

  t.same(exchanges.filter((e) => e.status === 0).map((e) => `${e.kind}: ${e.failure}`), [], 'every request was answered')
  const late = exchanges.filter((e) => e.status >= 500 && (e.endedAt < stoppingAt || e.startedAt > recoveredAt))
  t.same(late.map((e) => ({ kind: e.kind, status: e.status, body: e.body })), [], 'every 5xx answer falls in the outage')
  const outage = exchanges.filter((e) => e.status >= 500)
  t.ok(outage.every((e) => typeof e.body?.error === 'string' && typeof e.body?.code === 'string' && typeof e.body?.requestId === 'string'),
    'every 5xx answer carries the error envelope with its request id')
  t.same(exchanges.filter((e) => e.status >= 300 && e.status < 500).map((e) => ({ kind: e.kind, status: e.status, body: e.body })), [],
    'no request is refused')
  t.ok(exchanges.some((e) => e.startedAt > recoveredAt && e.status < 300), 'requests succeed after the recovery')
  t.comment(`${exchanges.length} requests; ${outage.length} answered 5xx during the outage`)

  // Deliveries refused during the outage, sent again with the same id as the recovery
  // rules ask, are accepted now.
  for (const failed of exchanges.filter((e) => e.kind === 'webhook' && e.status >= 500)) {
    const again = await call('POST', webhook, { retry: failed.deliveryId }, { 'idempotency-key': failed.deliveryId! })
    t.equal(again.status, 202, `delivery ${failed.deliveryId} sent again is accepted`)
    exchanges.push({ ...failed, status: again.status, body: again.body })
  }

  // Every accepted delivery and run start has its run, and every run settles.
  const accepted = exchanges.filter((e) => (e.kind === 'webhook' || e.kind === 'start') && e.status === 202)
  t.ok(accepted.length > 0, 'deliveries and run starts were accepted')
  const acceptedIds = accepted.map((e) => e.body.runId as string)
  const missing = await owner<{ id: string }[]>`
    select u.id from unnest(${acceptedIds}::uuid[]) u(id) where not exists (select 1 from app.runs r where r.id = u.id)`
  t.same(missing.map((row) => row.id), [], 'every accepted delivery and run start has its run')
  const settleBy = Date.now() + SETTLE_DEADLINE_MS
  let unsettled: { id: string; status: string }[] = []
  do {
    unsettled = await owner<{ id: string; status: string }[]>`select id, status from app.runs where status not in ('completed', 'failed', 'cancelled')`
    if (unsettled.length === 0) break
    await new Promise((resolve) => setTimeout(resolve, 250))
  } while (Date.now() < settleBy)
  if (unsettled.length > 0) {
    const jobs = await owner`select task_identifier, locked_by, locked_at, run_at, attempts, last_error from graphile_worker.jobs`
    t.comment(`jobs: ${JSON.stringify(jobs)}`)
    t.comment(`worker (exit ${worker.child.exitCode}) log:\n${worker.lines.filter((line) => !/Completed task|"message":"request"/.test(line)).slice(-40).join('\n')}`)
  }
  t.same(unsettled, [], 'every run settles')
  const [failed] = await owner<{ n: number }[]>`select count(*)::int as n from app.runs where status <> 'completed'`
  t.equal(failed!.n, 0, 'every run completed')

  // The same processes, still running, still answering.
  t.equal(api.child.exitCode, null, 'the API process is the one started before the restart')
  t.equal(worker.child.exitCode, null, 'the worker process is the one started before the restart')
  t.equal((await call('GET', '/api/health')).status, 200, 'the API answers')
  const after = await call('POST', '/api/v1/automations/faults__restart/runs', {})
  t.equal(after.status, 202)
  let last: { status: string } | undefined
  for (const until = Date.now() + SETTLE_DEADLINE_MS; Date.now() < until;) {
    ;[last] = await owner<{ status: string }[]>`select status from app.runs where id = ${after.body.runId}`
    if (last?.status === 'completed') break
    await new Promise((resolve) => setTimeout(resolve, 250))
  }
  t.equal(last?.status, 'completed', 'the worker runs a run started after the restart')
  const runnerLines = worker.lines.map((line) => entry(line)?.message).filter((text) => /job runner|released/.test(String(text)))
  t.comment(`the worker's runner: ${runnerLines.join(' | ') || 'never stopped'}`)
})
