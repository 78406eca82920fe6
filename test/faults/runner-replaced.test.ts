// A job runner replaces itself (server/core/queue/supervised-runner.ts) when a job
// fetch fails, since its lost answer may have locked a job nobody runs, and when
// graphile-worker starts shutting the runner down on its own, since that shutdown
// waits on every running job and may never end. The new runner takes jobs at once;
// the old one finishes what it runs, and whatever is left locked under its ids is
// released.
import t from 'tap'
import postgres from 'postgres'
import { Logger, type Task, type WorkerPool } from 'graphile-worker'
import { freshDatabase } from '../lib/db.ts'
import { eventually } from '../lib/wait.ts'
import pg from 'pg'
import { connectionLost, startSupervisedRunner, type SupervisedRunner } from '../../server/core/queue/supervised-runner.ts'

const db = await freshDatabase()
t.teardown(() => db.drop())

interface Harness {
  runner: SupervisedRunner
  pools: WorkerPool[]
  ran: string[]
  lines: string[]
  openGate: () => void
  slowStarted: Promise<void>
}

async function harness(t: { teardown: (fn: () => Promise<void>) => void }): Promise<Harness> {
  const ran: string[] = []
  const lines: string[] = []
  const pools: WorkerPool[] = []
  let openGate!: () => void
  const gate = new Promise<void>((resolve) => { openGate = resolve })
  let markStarted!: () => void
  const slowStarted = new Promise<void>((resolve) => { markStarted = resolve })
  const quick: Task = async (payload) => { ran.push((payload as { n: string }).n) }
  const slow: Task = async () => {
    markStarted()
    await gate
  }
  const runner = await startSupervisedRunner(db.url, {
    runner: { concurrency: 2, taskList: { quick, slow }, pollInterval: 200 },
    poolSize: 4,
    logger: new Logger(() => (level, message) => { if (level !== 'debug') lines.push(`${level}: ${message}`) }),
    onEvents: (events) => events.on('pool:create', ({ workerPool }) => pools.push(workerPool)),
  })
  t.teardown(async () => {
    openGate()
    await runner.stop(2_000)
  })
  return { runner, pools, ran, lines, openGate, slowStarted }
}

const addJob = (task: string, n: string) => db.owner`select graphile_worker.add_job(${task}::text, ${db.owner.json({ n })}::json) as job`

t.test('a fetch that fails: the new runner runs the job the lost answer left locked', async (t) => {
  const { pools, ran, lines } = await harness(t)
  const [oldPool] = pools
  // What a fetch whose answer was lost leaves: a job locked under the runner's id,
  // which none of its workers runs.
  const [job] = await db.owner<{ id: string }[]>`select (graphile_worker.add_job('quick', ${db.owner.json({ n: 'orphan' })}::json,
                                     run_at => now() + interval '1 hour')).id`
  await db.owner`update graphile_worker._private_jobs set locked_by = ${oldPool!.id}, locked_at = now() - interval '1 minute',
                   run_at = now() where id = ${job!.id}`
  // A fetch that fails: the job table is held, and the runner's waiting fetch is ended
  // with its connection.
  const holder = postgres(db.url, { max: 1, onnotice: () => {} })
  t.teardown(() => holder.end())
  await holder.begin(async (tx) => {
    await tx`lock table graphile_worker._private_jobs in access exclusive mode`
    const waiting = await eventually(() => db.owner<{ pid: number }[]>`
      select pid from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock' and query ilike '%_private_jobs%'`,
    (rows) => rows.length > 0)
    await db.owner`select pg_terminate_backend(pid) from unnest(${waiting.map((row) => row.pid)}::int[]) pid`
  })
  await eventually(async () => ran, (names) => names.includes('orphan'))
  t.pass('the job the lost answer locked ran')
  t.ok(pools.length >= 2 && pools.at(-1)!.id !== oldPool!.id, 'a new runner took over')
  // Whichever tells first: the fetch's failure or its connection's.
  t.ok(lines.some((line) => /job runner is replaced \((fetching a job failed|a connection failed)/.test(line)), 'the replacement is logged with its reason')
  // Forgotten just after its jobs are released, so the orphan may run a moment before.
  await eventually(() => db.owner`select count(*)::int as n from app.job_holders where holder = ${oldPool!.id}`,
    (rows) => rows[0]!.n === 0)
  t.pass('the old runner\'s id is forgotten')
  await addJob('quick', 'after')
  await eventually(async () => ran, (names) => names.includes('after'))
  t.pass('the new runner runs new jobs')
})

t.test('a runner shutting down on its own while a job runs: a new one takes jobs at once; the running job is not taken from it', async (t) => {
  const { pools, ran, lines, openGate, slowStarted } = await harness(t)
  await addJob('slow', 'slow')
  await slowStarted
  const [oldPool] = pools.slice(-1)
  // What graphile-worker does when it cannot record an outcome: it shuts the pool down,
  // and the shutdown waits for the running job.
  Promise.resolve(oldPool!.gracefulShutdown('an outcome could not be recorded')).catch(() => {})
  await eventually(async () => pools.length, (count) => count >= 2)
  t.pass('a new runner started while the old one still runs its job')
  await addJob('quick', 'during')
  await eventually(async () => ran, (names) => names.includes('during'))
  t.pass('a job added meanwhile ran')
  t.ok(lines.some((line) => /job runner is replaced \(it began shutting down/.test(line)), 'the replacement is logged with its reason')
  const [slow] = await db.owner`select locked_by from graphile_worker.jobs where task_identifier = 'slow'`
  t.equal(slow?.locked_by, oldPool!.id, 'the running job stays with the runner that runs it')
  openGate()
  await eventually(() => db.owner`select
      (select count(*)::int from graphile_worker.jobs where task_identifier = 'slow') as jobs,
      (select count(*)::int from app.job_holders where holder = ${oldPool!.id}) as holders`,
  (rows) => rows[0]!.jobs === 0 && rows[0]!.holders === 0)
  t.pass('the job finished under the old runner, which was then retired')
})

t.test('which errors leave a statement in doubt, and so replace the runner', async (t) => {
  const serverError = (code: string) => Object.assign(new pg.DatabaseError('failed', 0, 'error'), { code })
  const socketError = (code: string) => Object.assign(new Error('socket'), { code })
  t.ok(connectionLost(new Error('Connection terminated unexpectedly')), 'the driver\'s own error')
  t.ok(connectionLost(socketError('ECONNRESET')), 'a reset socket')
  t.ok(connectionLost(socketError('EPIPE')), 'a broken pipe')
  t.ok(connectionLost(serverError('57P01')), 'a terminated backend')
  t.ok(connectionLost(serverError('08006')), 'a connection failure the server reports')
  t.notOk(connectionLost(serverError('57014')), 'a cancelled statement rolled back')
  t.notOk(connectionLost(serverError('53300')), 'too many connections: nothing was sent')
  t.notOk(connectionLost(serverError('40P01')), 'a deadlock rolled back')
})
