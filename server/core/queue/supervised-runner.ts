// A graphile-worker runner kept alive for as long as its process runs, shared by the
// job worker (jobs/worker.ts) and the internal services' runners
// (server/core/internal-service/runner.ts).
//
// Faults graphile-worker does not survive on its own:
// - The database restarts. A runner that cannot record a job's outcome shuts its
//   pool down, and that shutdown waits for every running job; a shutdown that hangs
//   never settles the runner's promise. And a job fetch whose answer was lost with its
//   connection may have locked a job nobody runs: graphile-worker retries the fetch
//   and never looks at that job again, which stays locked for four hours. So a runner
//   that starts shutting down on its own, that lost a connection (connectionLost),
//   or that stopped is replaced: a new runner starts (once the database answers) and
//   takes jobs at once; the old one finishes what it runs, and then whatever is still
//   locked under its ids is released.
// - A process is killed (SIGKILL, the OOM killer). Its jobs stay locked for
//   graphile-worker's lock timeout of four hours. Here every runner registers the id
//   it locks jobs under (app.job_holders) and beats for it every few seconds on a
//   connection of its own; every runner sweeps, every few seconds, for holders that
//   stopped beating and releases their jobs (app.release_dead_job_holders). The beat
//   is what counts, not a session in pg_stat_activity, so it holds behind a
//   transaction pooler too. The run engine resumes each
//   released run from its last committed step.
import { EventEmitter } from 'node:events'
import pg from 'pg'
import { run, type Logger, type Runner, type RunnerOptions, type WorkerEvents } from 'graphile-worker'
import type { PoolMode } from '../db/connection.ts'

/** The application_name prefix of a holder's presence connection (app.job_holder_present). */
export const PRESENCE_PREFIX = 'tale-jobs:'
/** How often a runner looks for holders that died. */
export const SWEEP_INTERVAL_MS = 2_000
/**
 * How long a holder's connection must stay gone before its jobs are released: longer
 * than a live runner takes to connect again after a database restart.
 */
export const ABSENCE_GRACE = '10 seconds'
/** Waits between attempts to start a runner while the database does not answer. */
const RESTART_DELAYS_MS = [500, 1_000, 2_000, 5_000]
/**
 * How long a replaced runner may take to stop after it was replaced and after its last
 * job ended: past it, with no job running, its shutdown is taken as hung and its ids
 * are released anyway. Longer than recording the outcomes of its last jobs takes once
 * the database answers (graphile-worker retries them with waits of up to 30 s).
 */
export const HUNG_STOP_MS = 60_000

/**
 * Whether an error leaves the connection's last statement in doubt (its answer may
 * have been lost after it committed): errors of the socket or the driver, which carry
 * no SQLSTATE, connection exceptions (08) and operator intervention (57P: a shutdown,
 * a terminated backend). An error the server reported otherwise rolled its
 * transaction back, so nothing it did is left behind.
 */
export function connectionLost(error: unknown): boolean {
  if (!(error instanceof pg.DatabaseError)) return true
  const code = error.code ?? ''
  return code.startsWith('08') || code.startsWith('57P')
}

export interface SupervisedRunnerOptions {
  /** run()'s options, but those the supervisor owns (the pool, events, signals). */
  runner: Omit<RunnerOptions, 'pgPool' | 'connectionString' | 'events' | 'noHandleSignals' | 'logger'>
  /** Connections of one runner's pool (graphile-worker's and the tasks'). */
  poolSize: number
  /** transaction: behind a transaction pooler, which refuses startup options. */
  poolMode?: PoolMode
  logger: Logger
  /** Called with each runner's events, for callers that observe them. */
  onEvents?: (events: WorkerEvents) => void
}

export interface SupervisedRunner {
  /**
   * Stops taking jobs and waits up to graceMs for running ones to finish; jobs still
   * running then are released (unlocked, for another runner to take at once). Without
   * graceMs it waits for every running job. Then closes every connection.
   */
  stop: (graceMs?: number) => Promise<void>
  /** Settles when the runner has been stopped. */
  promise: Promise<void>
}

/** What the supervisor and a runner's event handlers share. */
interface RunnerControl {
  /** Set before the supervisor stops the runner: a shutdown then is no fault. */
  stopRequested: boolean
  /** Called when the runner must be replaced (set by the supervisor). */
  onFault: (reason: string) => void
  /** The jobs its workers run now (job:start to job:complete). */
  running: Set<string>
  /** When its last job ended (performance.now()), 0 before any. */
  lastJobEndedAt: number
}

/** One graphile-worker runner and what belongs to it. */
interface Incarnation {
  runner: Runner
  pool: pg.Pool
  /** The ids jobs are locked under: the worker pool's and its workers'. */
  holders: Set<string>
  presences: Presence[]
  control: RunnerControl
  /** Set once the runner's promise settled. */
  done: boolean
  /** Settles with the runner's promise, either way. */
  settled: Promise<void>
  /** Set once a replacement for it began. */
  replaced: boolean
  retired: boolean
}

/**
 * Starts a runner; rejects when the first one cannot start (a start-up failure is the
 * operator's to see). Later failures restart it.
 */
export async function startSupervisedRunner(connectionString: string, options: SupervisedRunnerOptions): Promise<SupervisedRunner> {
  const { logger } = options
  let stopping = false
  let current = await incarnate(connectionString, options)
  let settle!: () => void
  const promise = new Promise<void>((resolve) => { settle = resolve })

  const sweep = setInterval(() => {
    current.pool.query<{ released: string[] }>('select app.release_dead_job_holders($1::interval) as released', [ABSENCE_GRACE])
      .then(({ rows: [row] }) => {
        if (row && row.released.length > 0) logger.warn(`released the jobs of runners that died: ${row.released.join(', ')}`)
      }, (error: Error) => logger.debug(`looking for runners that died failed: ${error.message}`))
  }, SWEEP_INTERVAL_MS)
  sweep.unref()

  // Replaced runners still finishing their jobs: a stop ends them too.
  const windingDown = new Set<Incarnation>()
  // Replacements in progress, which a stop waits for, and the grace the stop gives.
  const replacements = new Set<Promise<void>>()
  let stopGraceMs: number | undefined
  const fault = (incarnation: Incarnation, reason: string) => {
    const replacement = replace(incarnation, reason)
    replacements.add(replacement)
    void replacement.finally(() => replacements.delete(replacement))
  }
  const supervise = (incarnation: Incarnation) => {
    incarnation.control.onFault = (reason) => fault(incarnation, reason)
    void incarnation.settled.then(() => fault(incarnation, 'it stopped'))
  }
  const replace = async (old: Incarnation, reason: string) => {
    if (stopping || old !== current || old.replaced) return
    old.replaced = true
    logger.error(`the job runner is replaced (${reason}); starting a new one`)
    for (let attempt = 0; !stopping; attempt += 1) {
      try {
        const next = await incarnate(connectionString, options)
        if (stopping) {
          await stopIncarnation(next, stopGraceMs)
          return
        }
        current = next
        break
      } catch (error) {
        logger.warn(`starting the job runner again failed: ${(error as Error).message}`)
        await delay(RESTART_DELAYS_MS[Math.min(attempt, RESTART_DELAYS_MS.length - 1)]!)
      }
    }
    if (stopping) return
    supervise(current)
    logger.info('the job runner started again')
    // The old runner finishes the jobs it runs (their outcomes are recorded by it);
    // what is still locked under its ids after that was fetched by an answer that never
    // arrived, or belongs to a shutdown that hung, and is released for the new one (the
    // run engine resumes each run from its last committed step).
    windingDown.add(old)
    old.control.stopRequested = true
    if (!old.done) old.runner.stop().catch(() => {})
    const replacedAt = performance.now()
    let hung = false
    while (!old.done && !stopping) {
      const { running, lastJobEndedAt } = old.control
      if (running.size === 0 && performance.now() - Math.max(replacedAt, lastJobEndedAt) >= HUNG_STOP_MS) {
        logger.warn(`the replaced job runner did not stop within ${HUNG_STOP_MS} ms of its last job; releasing its jobs`)
        hung = true
        break
      }
      await Promise.race([old.settled, delay(1_000)])
    }
    if (stopping || old.retired) return
    windingDown.delete(old)
    await release(current.pool, old.holders, logger)
    // A hung runner may still lock a job with a fetch in flight: its ids are left for
    // the sweep, which releases what they hold once their beat has stopped.
    await retire(old, logger, 2_000, { forget: !hung })
  }
  supervise(current)

  return {
    promise,
    stop: async (graceMs?: number) => {
      if (stopping) return promise
      stopping = true
      stopGraceMs = graceMs
      clearInterval(sweep)
      // A replacement in progress ends first: a runner it started is stopped with the
      // same grace, and the one it replaced is left winding down, for below.
      await Promise.all([...replacements])
      await Promise.all([current, ...windingDown].map((incarnation) => stopIncarnation(incarnation, graceMs)))
      settle()
    },
  }

  async function stopIncarnation(incarnation: Incarnation, graceMs?: number): Promise<void> {
    incarnation.control.stopRequested = true
    // Settles with the runner's promise, also when graphile-worker was stopping it already.
    const stopped = incarnation.runner.stop().catch(() => {}).then(() => incarnation.settled)
    let late = false
    if (graceMs !== undefined) {
      let timer: NodeJS.Timeout | undefined
      late = await Promise.race([
        stopped.then(() => false, () => false),
        new Promise<boolean>((resolve) => { timer = setTimeout(() => resolve(true), graceMs) }),
      ])
      clearTimeout(timer)
    } else {
      await stopped.catch(() => {})
    }
    if (late) {
      // Jobs still running are unlocked for another runner (graphile-worker's
      // force_unlock_workers); the graceful stop never settles while a job runs on,
      // so it is not awaited.
      void stopped.catch(() => {})
      await release(incarnation.pool, incarnation.holders, logger)
    }
    await retire(incarnation, logger, late ? 2_000 : undefined)
  }
}

async function incarnate(connectionString: string, options: SupervisedRunnerOptions): Promise<Incarnation> {
  const { logger } = options
  // Keepalives: a connection whose peer vanished fails instead of waiting forever.
  const pool = new pg.Pool({ connectionString, max: options.poolSize, keepAlive: true })
  const control: RunnerControl = { stopRequested: false, onFault: () => {}, running: new Set(), lastJobEndedAt: 0 }
  // A connection that fails (a database restart) must not end the process; one lost
  // while a statement was out may have locked a job nobody runs, so the runner is
  // replaced (graphile-worker retries some of its fetches on its own, so a failed
  // fetch alone would not say so).
  const lost = (error: Error) => {
    logger.error(`job runner connection failed: ${error.message}`)
    if (connectionLost(error)) control.onFault(`a connection failed: ${error.message}`)
  }
  pool.on('error', lost)
  pool.on('connect', (client) => client.on('error', lost))
  const holders = new Set<string>()
  const presences: Presence[] = []
  // Jobs are locked under the worker pool's id, which graphile-worker draws when it
  // creates the pool. No connection is handed out between then and the id's
  // registration, so no job is ever locked under an id a sweep cannot release.
  let registered: Promise<void> | null = null
  const events: WorkerEvents = new EventEmitter()
  events.on('pool:create', ({ workerPool }) => {
    holders.add(workerPool.id)
    const presence = holdPresence(connectionString, workerPool.id, logger, options.poolMode ?? 'session')
    presences.push(presence)
    registered = presence.registered
  })
  events.on('worker:create', ({ worker }) => holders.add(worker.workerId))
  events.on('job:start', ({ job }) => control.running.add(job.id))
  events.on('job:complete', ({ job }) => {
    control.running.delete(job.id)
    control.lastJobEndedAt = performance.now()
  })
  events.on('pool:gracefulShutdown', ({ message }) => {
    if (!control.stopRequested) control.onFault(`it began shutting down: ${message}`)
  })
  events.on('worker:getJob:error', ({ error }) => {
    if (connectionLost(error)) control.onFault(`fetching a job failed: ${(error as Error).message}`)
  })
  options.onEvents?.(events)
  gateConnections(pool, () => registered)
  try {
    // Outcomes recorded through graphile-worker's batcher: recorded one by one, an
    // outcome that cannot be recorded (the database is down) is a promise nobody
    // handles, which ends the process; batched, it stops the runner, which is then
    // started again here.
    const preset = { ...options.runner.preset,
      worker: { completeJobBatchDelay: 0, failJobBatchDelay: 0, ...options.runner.preset?.worker } }
    const runner = await run({ ...options.runner, preset, pgPool: pool, events, logger, noHandleSignals: true })
    const incarnation: Incarnation = {
      runner, pool, holders, presences, control, done: false, replaced: false, retired: false,
      settled: runner.promise.then(() => { incarnation.done = true }, () => { incarnation.done = true }),
    }
    return incarnation
  } catch (error) {
    await Promise.all(presences.map((presence) => presence.close()))
    await pool.end().catch(() => {})
    throw error
  }
}

/**
 * Ends what is left of a runner: its presence (after its jobs were released or
 * finished) and its pool; its ids are forgotten unless left for the sweep.
 */
async function retire(incarnation: Incarnation, logger: Logger, poolWaitMs?: number, { forget = true } = {}): Promise<void> {
  if (incarnation.retired) return
  incarnation.retired = true
  if (forget) {
    await incarnation.pool.query('delete from app.job_holders where holder = any($1::text[])', [[...incarnation.holders]])
      .catch((error: Error) => logger.debug(`forgetting the runner's ids failed: ${error.message}`))
  }
  await Promise.all(incarnation.presences.map((presence) => presence.close()))
  const ended = incarnation.pool.end().catch(() => {})
  // A job still holding a connection would keep pool.end() waiting.
  await (poolWaitMs === undefined ? ended : Promise.race([ended, delay(poolWaitMs)]))
}

async function release(pool: pg.Pool, holders: Set<string>, logger: Logger): Promise<void> {
  const ids = [...holders]
  await pool.query('select graphile_worker.force_unlock_workers($1::text[])', [ids])
    .then(() => logger.info(`released the jobs of ${ids.join(', ')} for another worker`),
      (error: Error) => logger.error(`releasing the jobs of ${ids.join(', ')} failed: ${error.message}`))
}

/** Holds back every new connection of the pool while `wait` gives a pending promise. */
function gateConnections(pool: pg.Pool, wait: () => Promise<void> | null): void {
  const connect = pool.connect.bind(pool) as (callback?: (...args: any[]) => void) => any
  ;(pool as { connect: unknown }).connect = (callback?: (...args: any[]) => void) => {
    const gate = wait()
    if (!gate) return connect(callback)
    if (callback) {
      void gate.then(() => connect(callback), (error) => callback(error))
      return undefined
    }
    return gate.then(() => connect())
  }
}

interface Presence {
  /** Settles once the holder is registered and its connection open. */
  registered: Promise<void>
  close: () => Promise<void>
}

/**
 * Registers a holder and beats for it (app.job_holders.beat_at) every SWEEP_INTERVAL_MS
 * on a connection of its own for as long as it lives, connecting again whenever the
 * connection is lost (a database restart). A connection of its own, so a runner whose
 * pool is busy with long jobs still beats. In session mode it also carries TCP
 * keepalives, so the server notices a host that vanished without closing it.
 */
function holdPresence(connectionString: string, holder: string, logger: Logger, poolMode: PoolMode): Presence {
  let closed = false
  let client: pg.Client | null = null
  let wake: () => void = () => {}
  let markRegistered!: () => void
  const registered = new Promise<void>((resolve) => { markRegistered = resolve })
  const pause = (ms: number) => new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms)
    wake = () => { clearTimeout(timer); resolve() }
  })
  const loop = (async () => {
    for (let attempt = 0; !closed; attempt += 1) {
      const connection = new pg.Client({
        connectionString, application_name: `${PRESENCE_PREFIX}${holder}`, keepAlive: true, connectionTimeoutMillis: 10_000,
        // A transaction pooler refuses startup options.
        ...(poolMode === 'session' ? { options: '-c tcp_keepalives_idle=30 -c tcp_keepalives_interval=10 -c tcp_keepalives_count=3' } : {}),
      })
      client = connection
      let lost = false
      connection.on('error', () => { lost = true; wake() })
      connection.on('end', () => { lost = true; wake() })
      try {
        await connection.connect()
        await connection.query(`insert into app.job_holders (holder) values ($1)
                                on conflict (holder) do update set missing_since = null, beat_at = now()`, [holder])
        attempt = 0
        markRegistered()
        while (!closed && !lost) {
          await pause(SWEEP_INTERVAL_MS)
          if (closed || lost) break
          await connection.query('update app.job_holders set beat_at = now(), missing_since = null where holder = $1', [holder])
        }
      } catch (error) {
        if (!closed) logger.debug(`the presence of ${holder} failed: ${(error as Error).message}`)
      }
      client = null
      await connection.end().catch(() => {})
      if (!closed) await pause(RESTART_DELAYS_MS[Math.min(attempt, RESTART_DELAYS_MS.length - 1)]!)
    }
  })()
  return {
    registered,
    close: async () => {
      closed = true
      markRegistered()
      wake()
      await client?.end().catch(() => {})
      await loop
    },
  }
}

// Not unref'd: between two runners nothing else may keep a worker process alive (its
// connections are gone), and the process would end quietly.
const delay = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))
