// Workers killed with SIGKILL at random moments while 100 runs go through: no run is
// lost and no committed step runs again. A killed worker leaves its jobs locked in the
// queue; live workers release them once its presence connection is gone
// (server/core/queue/supervised-runner.ts), and each run resumes from its last
// committed step. The seed is printed; WORKER_KILL_SEED replays one.
import t from 'tap'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { deploy } from '../lib/automations.ts'
import { world } from '../lib/world.ts'
import { message, spawnMain, type Spawned } from '../ops/process.ts'

const RUNS = 100
const KILLS = 2
/**
 * Workers started at once, so that process start-ups (slow on a loaded machine) run
 * side by side rather than one after another: one of them always survives the kills.
 */
const WORKERS = 3
const STEPS = ['a', 'b', 'c', 'd']
/** Generous: the machine is shared; the wait is a poll, never a sleep that must be long enough. */
const SETTLE_DEADLINE_MS = 90_000

/** mulberry32: a small seeded PRNG, so a failing schedule of kills can be replayed. */
function prng(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let x = Math.imul(a ^ (a >>> 15), 1 | a)
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296
  }
}

interface Hit { run: string; step: string; token: number }

t.test('workers killed at random moments lose no run and repeat no committed step', async (t) => {
  const seed = Number(process.env.WORKER_KILL_SEED ?? Math.floor(Math.random() * 2 ** 31))
  t.comment(`seed ${seed} (WORKER_KILL_SEED=${seed} replays it)`)
  // Two streams, so the kill schedule does not shift with the number of calls.
  const random = prng(seed)
  const stepDelay = prng(seed ^ 0x5bd1e995)
  const began = Date.now()
  const elapsed = () => `${((Date.now() - began) / 1000).toFixed(1)} s`

  // The steps' side effect: every call is recorded and answered with a token that
  // grows with each call, which the run commits as the step's output. A committed
  // step that ran again would leave a call after the committed one.
  const hits: Hit[] = []
  let token = 0
  const target = http.createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (chunk: Buffer) => chunks.push(chunk))
    req.on('end', () => {
      const { run, step } = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { run: string; step: string }
      token += 1
      hits.push({ run, step, token })
      const answer = JSON.stringify({ token })
      // A seeded wait keeps steps in flight long enough for kills to land in them.
      setTimeout(() => {
        res.setHeader('content-type', 'application/json')
        res.end(answer)
      }, Math.floor(stepDelay() * 600))
    })
  })
  await new Promise<void>((resolve) => target.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => { target.closeAllConnections(); target.close(() => resolve()) }))
  const base = `http://127.0.0.1:${(target.address() as AddressInfo).port}`

  // Starting 100 runs at once is beyond the starting-work budget; this test is not about it.
  const { service, dev } = await world(t, { env: { RATE_LIMIT_SCALE: '100' } })
  await deploy(await dev.mcp(), {
    name: 'faults/kill',
    steps: [
      ...STEPS.map((slug, i) => ({
        slug, type: 'http',
        config: { method: 'POST', url: `${base}/${slug}`, body: { run: '{{ run.id }}', step: slug } },
        next: { success: STEPS[i + 1] ?? 'end' },
      })),
      { slug: 'end', type: 'output', config: { mapping: { done: true } } },
    ],
  })

  const runIds: string[] = []
  for (let batch = 0; batch < RUNS; batch += 10) {
    const started = await Promise.all(Array.from({ length: Math.min(10, RUNS - batch) },
      () => dev.post('/api/v1/automations/faults__kill/runs', {})))
    for (const answer of started) {
      t.equal(answer.status, 202, 'the run is accepted')
      runIds.push(answer.body.runId)
    }
  }
  t.comment(`${RUNS} runs started at ${elapsed()}`)

  const workers: Spawned[] = []
  t.teardown(async () => {
    for (const worker of workers) worker.child.kill('SIGKILL')
    await Promise.all(workers.map((worker) => worker.closed))
  })
  /** Workers that have started taking jobs and are not killed. */
  const live = new Set<Spawned>()
  let liveChanged: () => void = () => {}
  const spawnWorker = () => {
    const worker = spawnMain(['worker'], { DATABASE_URL: service.db.url, S3_ENDPOINT: 'none', LOG_LEVEL: 'info', WORKER_CONCURRENCY: '4' })
    workers.push(worker)
    worker.line(message('worker started')).then(() => { live.add(worker); liveChanged() }, () => {})
  }
  const unsettled = async () => {
    const [row] = await service.db.owner<{ n: number }[]>`
      select count(*)::int as n from app.runs where id = any(${runIds}::uuid[]) and status not in ('completed', 'failed', 'cancelled')`
    return row!.n
  }

  // A worker taking jobs is killed at a random moment while runs remain, and a new
  // one is started in its place at once.
  let kills = 0
  for (let i = 0; i < WORKERS; i++) spawnWorker()
  while (kills < KILLS && (await unsettled()) > 0) {
    while (live.size < 1) await new Promise<void>((resolve) => { liveChanged = resolve })
    const killAfter = 500 + Math.floor(random() * 2_500)
    await new Promise((resolve) => setTimeout(resolve, killAfter))
    const candidates = [...live]
    const victim = candidates[Math.floor(random() * candidates.length)]!
    live.delete(victim)
    victim.child.kill('SIGKILL')
    await victim.closed
    kills += 1
    t.comment(`killed a worker after ${killAfter} ms at ${elapsed()}; ${await unsettled()} runs unsettled`)
    spawnWorker()
  }

  const deadline = Date.now() + SETTLE_DEADLINE_MS
  while ((await unsettled()) > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 250))

  t.comment(`settled at ${elapsed()}`)
  const runs = await service.db.owner<{ id: string; status: string; trace: { slug: string; output?: { body?: { token?: number } } }[] }[]>`
    select id, status, trace from app.runs where id = any(${runIds}::uuid[])`
  t.equal(runs.length, RUNS, 'every run exists')
  const notCompleted = runs.filter((run) => run.status !== 'completed')
  if (notCompleted.length > 0) {
    const locked = await service.db.owner`select task_identifier, locked_by, locked_at, attempts, last_error from graphile_worker.jobs where locked_by is not null`
    t.comment(`unsettled: ${JSON.stringify(notCompleted.map((run) => ({ id: run.id, status: run.status, trace: run.trace.map((e) => e.slug) })))}`)
    t.comment(`locked jobs: ${JSON.stringify(locked)}`)
    t.comment(`worker logs: ${workers.map((w) => w.lines.join('\n')).join('\n---\n')}`)
  }
  t.same(notCompleted.map((run) => run.id), [], 'every run completed (none lost)')

  let repeatedInFlight = 0
  const repeatedCommitted: string[] = []
  for (const run of runs) {
    t.same(run.trace.map((entry) => entry.slug), [...STEPS, 'end'], `run ${run.id} committed each step once`)
    for (const step of STEPS) {
      const calls = hits.filter((hit) => hit.run === run.id && hit.step === step)
      const committed = run.trace.find((entry) => entry.slug === step)?.output?.body?.token
      if (calls.length > 1) repeatedInFlight += 1
      // The committed call must be the last: a call after it is a committed step run again.
      const later = calls.filter((hit) => committed !== undefined && hit.token > committed)
      if (committed === undefined || !calls.some((hit) => hit.token === committed) || later.length > 0) {
        repeatedCommitted.push(`${run.id}/${step}: committed ${committed}, calls ${calls.map((hit) => hit.token).join(',')}`)
      }
    }
  }
  t.same(repeatedCommitted, [], 'no committed step ran again')
  // 400 calls of 300 ms on average, 4 at once, outlast the first kill's 3 s at most.
  t.ok(kills >= 1, 'workers were killed while runs were in flight')
  t.comment(`${kills} kills; ${repeatedInFlight} steps in flight at a kill ran again; ${hits.length} calls in all`)
})
