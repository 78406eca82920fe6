// The worker's heartbeat row in app.worker_heartbeats (db/schema/0029): written at
// start and every HEARTBEAT_INTERVAL_MS, deleted on a clean stop. `admin status`
// counts the rows newer than HEARTBEAT_LIVE_SECONDS as live workers.
import { randomBytes } from 'node:crypto'
import os from 'node:os'
import type pg from 'pg'
import { HEARTBEAT_FORGET_SECONDS, HEARTBEAT_INTERVAL_MS } from '../server/core/worker-heartbeat.ts'

/** How long a stop waits for the row's deletion before leaving it to go stale. */
const STOP_WAIT_MS = 2_000

export interface Heartbeat {
  workerId: string
  /** Stops beating and deletes the row. */
  stop: () => Promise<void>
}

export async function startHeartbeat(pool: pg.Pool, options: { concurrency: number;
  onError?: (error: Error) => void }): Promise<Heartbeat> {
  const host = os.hostname()
  const workerId = `${host}:${process.pid}:${randomBytes(4).toString('hex')}`
  const beat = () => pool.query(`
    insert into app.worker_heartbeats (worker_id, host, pid, concurrency) values ($1, $2, $3, $4)
    on conflict (worker_id) do update set beat_at = now()`, [workerId, host, process.pid, options.concurrency])
  // The first beat is awaited, so a worker is reported live as soon as it has started.
  await pool.query('delete from app.worker_heartbeats where beat_at < now() - make_interval(secs => $1)', [HEARTBEAT_FORGET_SECONDS])
  await beat()
  // One beat at a time: a slow database delays the next beat rather than piling them up.
  let inFlight: Promise<unknown> | null = null
  const timer = setInterval(() => {
    if (inFlight) return
    inFlight = beat().catch((error: Error) => options.onError?.(error)).finally(() => { inFlight = null })
  }, HEARTBEAT_INTERVAL_MS)
  timer.unref()
  return {
    workerId,
    stop: async () => {
      clearInterval(timer)
      // An unreachable database must not hold up the stop: the row then goes stale
      // and is reported as such.
      const forget = (async () => {
        await inFlight
        await pool.query('delete from app.worker_heartbeats where worker_id = $1', [workerId])
      })().catch((error: Error) => options.onError?.(error))
      let wait: NodeJS.Timeout | undefined
      await Promise.race([forget, new Promise((resolve) => { wait = setTimeout(resolve, STOP_WAIT_MS) })])
      clearTimeout(wait)
    },
  }
}
