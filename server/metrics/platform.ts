// /metrics/platform: the API process's own Prometheus registry (never prom-client's
// global one, so several services in one process keep their counts apart). Request,
// refusal and webhook counters count what this process answered; the job queue and
// the runs are read from SQL at each scrape, so they are right whichever process or
// worker replica did the work.
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client'
import type { Sql } from '../core/db/connection.ts'
import { limits } from '../core/limits.ts'
import { readSnapshot } from './snapshot.ts'

/** A request once answered (or abandoned), as the request log line sees it. */
export interface AnsweredRequest {
  method: string
  /** The declared pattern; null when no route matched. */
  route: string | null
  /** The status sent, or null when the connection closed before the answer was sent. */
  status: number | null
  seconds: number
  /** A 429's budget (the bucket that refused), when the refusal named one. */
  refusedBudget?: string
}

export interface PlatformMetrics {
  registry: Registry
  request: (answered: AnsweredRequest) => void
  webhookAccepted: (duplicate: boolean) => void
  webhookRefused: (code: string) => void
  /** Reads the job queue and the runs from the database; called before each scrape. */
  refresh: () => Promise<void>
}

// Node's parser admits a fixed set of verbs; anything else is folded into one label.
const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'])

/** Every budget of db/limits.json (rate.<budget>.perMinute), so each appears at 0 from the first scrape. */
export const BUDGETS = [...new Set(Object.keys(limits).filter((name) => name.startsWith('rate.')).map((name) => name.split('.')[1]!))]

export function createPlatformMetrics(owner: Sql): PlatformMetrics {
  const registry = new Registry()
  collectDefaultMetrics({ register: registry })

  const requests = new Counter({
    name: 'platform_http_requests_total',
    help: 'Requests answered by this process, by method, declared route pattern (unmatched when none) and status (aborted when the connection closed first).',
    labelNames: ['method', 'route', 'status'] as const, registers: [registry],
  })
  const duration = new Histogram({
    name: 'platform_http_request_duration_seconds',
    help: 'Time from a request\'s arrival to its answer (or its connection closing), by method and declared route pattern.',
    labelNames: ['method', 'route'] as const, registers: [registry],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
  })
  const rateLimited = new Counter({
    name: 'platform_rate_limited_total',
    help: 'Requests refused with 429 RATE_LIMITED, by the budget that refused them (unknown when the refusal named none).',
    labelNames: ['budget'] as const, registers: [registry],
  })
  for (const budget of BUDGETS) rateLimited.inc({ budget }, 0)
  const webhookAccepted = new Counter({
    name: 'platform_webhook_deliveries_accepted_total',
    help: 'Webhook deliveries accepted, by whether they repeated one already accepted (duplicate="true": no run started).',
    labelNames: ['duplicate'] as const, registers: [registry],
  })
  webhookAccepted.inc({ duplicate: 'false' }, 0)
  webhookAccepted.inc({ duplicate: 'true' }, 0)
  const webhookRefused = new Counter({
    name: 'platform_webhook_deliveries_refused_total', help: 'Webhook deliveries refused, by error code.',
    labelNames: ['code'] as const, registers: [registry],
  })

  const jobs = new Gauge({
    name: 'platform_job_queue_depth',
    help: 'Jobs in the queue, across every worker, by task and state (ready: due and free; scheduled: due later; locked: taken by a worker; failed: out of attempts).',
    labelNames: ['task', 'state'] as const, registers: [registry],
  })
  const oldest = new Gauge({
    name: 'platform_job_oldest_ready_age_seconds',
    help: 'How long the oldest ready job of each task has been due (0 when none is waiting).',
    labelNames: ['task'] as const, registers: [registry],
  })
  const runs = new Gauge({
    name: 'platform_runs',
    help: 'Automation runs, across every organization, by status and failure code (none unless failed).',
    labelNames: ['status', 'failure_code'] as const, registers: [registry],
  })
  const scraped = new Gauge({
    name: 'platform_database_scrape_success',
    help: 'Whether the job queue and the runs could be read for this scrape (1) or not (0: their families are empty).',
    registers: [registry],
  })

  return {
    registry,
    request: (answered) => {
      const method = METHODS.has(answered.method) ? answered.method : 'OTHER'
      const route = answered.route ?? 'unmatched'
      requests.inc({ method, route, status: answered.status === null ? 'aborted' : String(answered.status) })
      duration.observe({ method, route }, answered.seconds)
      if (answered.status === 429) rateLimited.inc({ budget: answered.refusedBudget ?? 'unknown' })
    },
    webhookAccepted: (duplicate) => webhookAccepted.inc({ duplicate: String(duplicate) }),
    webhookRefused: (code) => webhookRefused.inc({ code }),
    refresh: async () => {
      try {
        const snapshot = await readSnapshot(owner, async (sql) => {
          // Every task graphile-worker knows, at 0 when it has no job.
          const queue = await sql<{ task: string; ready: number; scheduled: number; locked: number; failed: number; oldest: number }[]>`
            select t.identifier as task,
                   count(j.id) filter (where j.locked_at is null and j.attempts < j.max_attempts and j.run_at <= now())::int as ready,
                   count(j.id) filter (where j.locked_at is null and j.attempts < j.max_attempts and j.run_at > now())::int as scheduled,
                   count(j.id) filter (where j.locked_at is not null)::int as locked,
                   count(j.id) filter (where j.locked_at is null and j.attempts >= j.max_attempts)::int as failed,
                   coalesce(extract(epoch from now() - min(j.run_at) filter (
                     where j.locked_at is null and j.attempts < j.max_attempts and j.run_at <= now())), 0)::float8 as oldest
              from graphile_worker._private_tasks t
              left join graphile_worker.jobs j on j.task_identifier = t.identifier
             group by t.identifier`
          const outcomes = await sql<{ status: string; failure_code: string | null; count: number }[]>`
            select status, failure_code, count(*)::int as count from app.runs group by status, failure_code`
          return { queue, outcomes }
        })
        // Cleared and set in one synchronous stretch, so a concurrent scrape never sees them half-filled.
        jobs.reset()
        oldest.reset()
        runs.reset()
        for (const row of snapshot.queue) {
          for (const state of ['ready', 'scheduled', 'locked', 'failed'] as const) jobs.set({ task: row.task, state }, row[state])
          oldest.set({ task: row.task }, row.oldest)
        }
        for (const row of snapshot.outcomes) runs.set({ status: row.status, failure_code: row.failure_code ?? 'none' }, row.count)
        scraped.set(1)
      } catch {
        // A database that does not answer in time leaves these families empty; the
        // counters of this process are still worth a scrape.
        jobs.reset()
        oldest.reset()
        runs.reset()
        scraped.set(0)
      }
    },
  }
}
