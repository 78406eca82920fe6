// `admin status`: migrations applied and pending by file name, live workers from
// their heartbeats, and the job queue by task. A database one migration behind is
// reported as such, then up to date once `admin migrate` ran.
import { execFile } from 'node:child_process'
import { cp, mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'
import postgres from 'postgres'
import t from 'tap'
import { Logger } from 'graphile-worker'
import { ownerPool, requestPool } from '../../server/core/db/connection.ts'
import { dbRoot, migrate } from '../../server/core/db/migrate.ts'
import { HEARTBEAT_LIVE_SECONDS } from '../../server/core/worker-heartbeat.ts'
import { startWorker, type Worker } from '../../jobs/worker.ts'
import type { Status } from '../../server/admin/status.ts'
import { databaseUrl, sqlState, withDatabase } from '../lib/db.ts'

const run = promisify(execFile)
const NEWEST = '0029_worker_heartbeats.sql'

async function admin(url: string, args: string[]): Promise<unknown> {
  const { stdout } = await run(process.execPath, ['--import=tsx', 'server/admin/cli.ts', ...args], {
    env: { ...process.env, DATABASE_URL: url }, encoding: 'utf8', timeout: 170_000,
  })
  return JSON.parse(stdout)
}
const adminStatus = (url: string) => admin(url, ['status']) as Promise<Status>

// A database as the previous release left it: migrated from a copy of db/ without the
// newest schema file (and the policy file of its table).
const name = `tale_status_${Math.random().toString(16).slice(2, 10)}`
const maintenance = postgres(withDatabase(databaseUrl(), 'postgres'), { max: 1, onnotice: () => {} })
await maintenance.unsafe(`create database "${name}"`)
const url = withDatabase(databaseUrl(), name)
const owner = ownerPool(url, 2)
const previous = await mkdtemp(path.join(tmpdir(), 'tale-status-'))
t.teardown(async () => {
  await owner.end({ timeout: 5 })
  await maintenance.unsafe(`drop database if exists "${name}" with (force)`)
  await maintenance.end()
  await rm(previous, { recursive: true, force: true })
})
await cp(dbRoot, previous, { recursive: true })
await rm(path.join(previous, 'schema', NEWEST))
await rm(path.join(previous, 'policies', 'worker_heartbeats.sql'))
await migrate(owner, url, previous)

t.test('a database one release behind: the newest migration is pending', async (t) => {
  const status = await adminStatus(url)
  t.same(status.migrations.pending, [NEWEST])
  t.notOk(status.migrations.applied.includes(NEWEST))
  t.ok(status.migrations.applied.includes('0001_foundation.sql'))
  t.same(status.migrations.changed, ['policies/worker_heartbeats.sql'], 'the new policy file is yet to be applied')
  t.same(status.migrations.unknown, [])
  t.equal(status.migrations.upToDate, false)
  t.same(status.workers, { live: 0, liveWithinSeconds: HEARTBEAT_LIVE_SECONDS, processes: [] }, 'no heartbeat table yet, no worker')
})

t.test('after admin migrate: nothing pending, and the newest migration applied', async (t) => {
  const migrated = await admin(url, ['migrate']) as { applied: string[] }
  t.ok(migrated.applied.includes(`schema/${NEWEST}`))
  const status = await adminStatus(url)
  t.same(status.migrations.pending, [])
  t.same(status.migrations.changed, [])
  t.ok(status.migrations.applied.includes(NEWEST))
  t.equal(status.migrations.upToDate, true)
})

t.test('a file a newer release applied is reported as unknown, as an old replica sees it during a rollout', async (t) => {
  await owner`insert into public.schema_migrations (kind, name, checksum) values ('schema', '9999_from_a_newer_release.sql', 'x')`
  t.teardown(() => owner`delete from public.schema_migrations where name = '9999_from_a_newer_release.sql'`.then(() => {}))
  const status = await adminStatus(url)
  t.same(status.migrations.unknown, ['9999_from_a_newer_release.sql'])
  t.equal(status.migrations.applied.at(-1), '9999_from_a_newer_release.sql')
  t.same(status.migrations.pending, [])
  t.equal(status.migrations.upToDate, true, 'nothing this release has is pending')
})

t.test('a live worker and the queue by task', async (t) => {
  // Jobs of a task no worker knows stay where they are put: ready, scheduled, running
  // (locked as a worker locks them) and failed (out of attempts).
  const probe = 'status_probe'
  await owner`select graphile_worker.add_job(${probe}, '{}'::json, run_at := now() - interval '10 minutes')`
  await owner`select graphile_worker.add_job(${probe}, '{}'::json)`
  await owner`select graphile_worker.add_job(${probe}, '{}'::json, run_at := now() + interval '1 hour')`
  const [running] = await owner`select (graphile_worker.add_job(${probe}, '{}'::json)).id`
  await owner`update graphile_worker._private_jobs set locked_at = now(), locked_by = 'elsewhere', attempts = 1 where id = ${running!.id}`
  const [failed] = await owner`select (graphile_worker.add_job(${probe}, '{}'::json, max_attempts := 1)).id`
  await owner`update graphile_worker._private_jobs set attempts = 1, last_error = 'gave up' where id = ${failed!.id}`
  // A process that died without stopping left its row behind.
  await owner`insert into app.worker_heartbeats (worker_id, host, pid, concurrency, started_at, beat_at)
              values ('gone:1:dead', 'gone', 1, 2, now() - interval '2 hours', now() - interval '1 hour')`

  const worker: Worker = await startWorker(url, { objectStore: null, crontab: false, concurrency: 3, logger: new Logger(() => () => {}) })
  let stopped = false
  t.teardown(() => stopped ? undefined : worker.stop({ graceMs: 1_000 }))

  const status = await adminStatus(url)
  t.equal(status.workers.live, 1, 'the running worker is live; the dead one is not')
  const live = status.workers.processes.filter((p) => p.live)
  t.match(live, [{ host: String, pid: process.pid, concurrency: 3 }])
  t.ok(live[0]!.secondsSinceBeat <= HEARTBEAT_LIVE_SECONDS)
  t.match(status.workers.processes.find((p) => p.id === 'gone:1:dead'), { live: false })
  t.ok(status.workers.processes.find((p) => p.id === 'gone:1:dead')!.secondsSinceBeat >= 3600)

  const task = status.queue.tasks.find((x) => x.task === probe)
  t.match(task, { ready: 2, scheduled: 1, running: 1, failed: 1 })
  t.ok(task!.oldestReadySeconds! >= 600, `the oldest ready job has waited ten minutes (${task!.oldestReadySeconds} s)`)

  t.test('a clean stop deletes the worker\'s row', async (t) => {
    await worker.stop({ graceMs: 5_000 })
    stopped = true
    const after = await adminStatus(url)
    t.equal(after.workers.live, 0)
    t.same(after.workers.processes.map((p) => p.id), ['gone:1:dead'])
  })
})

t.test('the heartbeats are the owner\'s: the request role cannot read or write them', async (t) => {
  const requests = requestPool(url, 1)
  t.teardown(() => requests.end())
  t.equal(await sqlState(() => requests`select * from app.worker_heartbeats`), '42501')
  t.equal(await sqlState(() => requests`delete from app.worker_heartbeats`), '42501')
})
