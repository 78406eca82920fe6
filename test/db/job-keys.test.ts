// Keyed jobs (app.add_job, db/functions/0006_jobs.sql): work asked for while a worker
// is taking the pending job of the same key is never lost. graphile-worker's add_job
// then waits for the worker's lock, finds the job taken and adds nothing, though the
// taken job may have read the world before the asking transaction committed.
import t from 'tap'
import postgres from 'postgres'
import { freshDatabase } from '../lib/db.ts'
import { eventually } from '../lib/wait.ts'

const db = await freshDatabase()
t.teardown(() => db.drop())

interface Job { id: string; key: string | null; locked: boolean }
const jobsOf = (task: string) => db.owner<Job[]>`
  select j.id::text, j.key, j.locked_at is not null as locked
    from graphile_worker._private_jobs j join graphile_worker._private_tasks k on k.id = j.task_id
   where k.identifier = ${task} order by j.id`

/**
 * A worker taking the keyed job (its lock not yet committed) while another
 * transaction asks for the same work; the worker's take commits while the asker waits.
 */
async function askWhileTaken(t: { teardown: (fn: () => Promise<void>) => void }, task: string, ask: (sql: postgres.Sql) => Promise<unknown>): Promise<Job[]> {
  await db.owner`select app.enqueue(${task}, '{}'::jsonb, ${`${task}:key`})`
  const worker = postgres(db.url, { max: 1, onnotice: () => {} })
  const asker = postgres(db.url, { max: 1, onnotice: () => {} })
  t.teardown(async () => {
    await worker.end()
    await asker.end()
  })
  const [{ pid }] = await asker<[{ pid: number }]>`select pg_backend_pid() as pid`
  let taken!: () => void
  const jobTaken = new Promise<void>((resolve) => { taken = resolve })
  const taking = worker.begin(async (tx) => {
    await tx`update graphile_worker._private_jobs set locked_at = now(), locked_by = 'worker' where key = ${`${task}:key`}`
    taken()
    // Held until the asker waits on the taken job's row.
    await eventually(() => db.owner<{ waiting: boolean }[]>`
      select wait_event_type = 'Lock' as waiting from pg_stat_activity where pid = ${pid}`, (rows) => rows[0]?.waiting === true)
  })
  await jobTaken
  await Promise.all([taking, ask(asker)])
  return jobsOf(task)
}

t.test('app.enqueue while a worker takes the job of its key: a new job of that key runs after', async (t) => {
  const jobs = await askWhileTaken(t, 'drain_events', (sql) => sql`select app.enqueue('drain_events', '{}'::jsonb, 'drain_events:key')`)
  t.equal(jobs.length, 2, 'the taken job and a new one')
  t.match(jobs, [{ locked: true, key: null }, { locked: false, key: 'drain_events:key' }],
    'the taken job gave up its key to the new one, which waits for a worker')
})

t.test('the same race through app.add_job with its other arguments', async (t) => {
  const jobs = await askWhileTaken(t, 'crawl_website', (sql) =>
    sql`select app.add_job('crawl_website', '{}'::json, 'crawl_website:key', now(), 'website-scans-0', 3)`)
  t.equal(jobs.length, 2, 'the taken job and a new one')
  t.match(jobs, [{ locked: true, key: null }, { locked: false, key: 'crawl_website:key' }])
})

t.test('asking again for a job no worker holds keeps one job of the key', async (t) => {
  await db.owner`select app.enqueue('index_file', '{"revision": 1}'::jsonb, 'index_file:x')`
  await db.owner`select app.enqueue('index_file', '{"revision": 2}'::jsonb, 'index_file:x')`
  const [job] = await db.owner<{ payload: { revision: number } }[]>`select payload from graphile_worker._private_jobs where key = 'index_file:x'`
  t.same(job?.payload, { revision: 2 }, 'the pending job took the newer payload')
  t.equal((await jobsOf('index_file')).length, 1)
})
