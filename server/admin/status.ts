// `admin status`: what an operator watches during an upgrade. The migrations applied
// and pending, the worker processes alive, and the job queue by task. Reads only.
import type { Sql } from '../core/db/connection.ts'
import { migrationStatus, type MigrationStatus } from '../core/db/migrate.ts'
import { HEARTBEAT_LIVE_SECONDS } from '../core/worker-heartbeat.ts'

export interface WorkerProcess {
  id: string
  host: string
  pid: number
  concurrency: number
  startedAt: string
  lastBeatAt: string
  secondsSinceBeat: number
  live: boolean
}

export interface QueuedTask {
  task: string
  /** Due now and free to take. */
  ready: number
  /** Waiting for a later run_at: scheduled work and retries after a failure. */
  scheduled: number
  /** Locked by a worker: running. */
  running: number
  /** Out of attempts: graphile-worker keeps them and never runs them again. */
  failed: number
  /** How long the oldest ready job has been due, in whole seconds; null with none ready. */
  oldestReadySeconds: number | null
}

export interface Status {
  migrations: MigrationStatus & { upToDate: boolean }
  workers: { live: number; liveWithinSeconds: number; processes: WorkerProcess[] }
  queue: { tasks: QueuedTask[] }
}

export async function status(sql: Sql): Promise<Status> {
  const migrations = await migrationStatus(sql)
  return {
    migrations: { ...migrations, upToDate: migrations.pending.length === 0 && migrations.changed.length === 0 },
    workers: await workers(sql),
    queue: { tasks: await queue(sql) },
  }
}

async function workers(sql: Sql): Promise<Status['workers']> {
  const [table] = await sql<{ exists: boolean }[]>`select to_regclass('app.worker_heartbeats') is not null as exists`
  const processes = !table!.exists ? [] : (await sql<{ id: string; host: string; pid: number; concurrency: number;
    started_at: Date; beat_at: Date; age: number }[]>`
    select worker_id as id, host, pid, concurrency, started_at, beat_at,
           floor(extract(epoch from now() - beat_at))::int as age
      from app.worker_heartbeats order by started_at, worker_id`).map((row) => ({
    id: row.id, host: row.host, pid: row.pid, concurrency: row.concurrency,
    startedAt: row.started_at.toISOString(), lastBeatAt: row.beat_at.toISOString(),
    secondsSinceBeat: Math.max(0, row.age), live: row.age <= HEARTBEAT_LIVE_SECONDS,
  }))
  return { live: processes.filter((p) => p.live).length, liveWithinSeconds: HEARTBEAT_LIVE_SECONDS, processes }
}

async function queue(sql: Sql): Promise<QueuedTask[]> {
  // Before the first migration there is no queue to report.
  const [table] = await sql<{ exists: boolean }[]>`select to_regclass('graphile_worker._private_jobs') is not null as exists`
  if (!table!.exists) return []
  // graphile-worker's own columns: is_available = not locked and attempts left.
  return sql<QueuedTask[]>`
    select t.identifier as task,
           count(*) filter (where j.is_available and j.run_at <= now())::int as ready,
           count(*) filter (where j.is_available and j.run_at > now())::int as scheduled,
           count(*) filter (where j.locked_at is not null)::int as running,
           count(*) filter (where j.locked_at is null and j.attempts >= j.max_attempts)::int as failed,
           floor(extract(epoch from now() - min(j.run_at) filter (where j.is_available and j.run_at <= now())))::int
             as "oldestReadySeconds"
      from graphile_worker._private_jobs j
      join graphile_worker._private_tasks t on t.id = j.task_id
     group by t.identifier
     order by t.identifier`
}
