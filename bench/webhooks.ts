// Webhook deliveries: accepted per second at 32 connections over HTTP, each with its
// own Idempotency-Key and body so none is a duplicate, beside a floor that sends the
// server's statement (app.webhook_deliver with the input already checked, the steady
// state) through the request pool with no HTTP, both against an API process with no
// worker beside it; then how fast a worker process turns the accepted deliveries into
// completed runs. Every delivery comes from one address to one trigger, so
// all of them draw on the same two buckets and update the same trigger row.
import { createHash, randomBytes } from 'node:crypto'
import type { ChildProcess } from 'node:child_process'
import autocannon from 'autocannon'
import postgres from 'postgres'
import { requestPool } from '../server/core/db/connection.ts'
import { loadConfig } from '../server/core/config.ts'
import { rateBudgets, webhookBuckets } from '../server/auth/rate-budgets.ts'
import { loadConcurrently, statementsPerRequest, type Figures } from './measure.ts'


export interface WebhookFigures {
  http: Figures
  floor: Figures
  statements: number
  /** The worker on the accepted backlog: every run accepted during the load (the warm-up's too). */
  runs: { accepted: number; completed: number; completedPerSecond: number }
}

const HOOK = {
  name: 'bench/hook',
  steps: [
    { slug: 'set', type: 'set', config: { values: { greeting: 'hi {{ input.payload.n }}' } }, next: { success: 'end' } },
    { slug: 'end', type: 'output', config: { mapping: { greeting: '{{ steps.set.output.greeting }}' } } },
  ],
}

const sha256 = (data: string) => createHash('sha256').update(data).digest('hex')

/** Deploys a trivial automation with a webhook trigger; returns its URL token. */
export async function deployHook(url: string): Promise<{ token: string; automationId: string }> {
  const token = randomBytes(32).toString('base64url')
  const sql = postgres(url, { max: 1, onnotice: () => {} })
  const [hook] = await sql<{ id: string }[]>`
    with a as (
      insert into app.automations (organization_id, name, deployed_version)
      select id, ${HOOK.name}, 1 from app.organizations where slug = 'bench' returning organization_id, id
    ), v as (
      insert into app.automation_versions (organization_id, automation_id, version, document)
      select organization_id, id, 1, ${sql.json(HOOK)} from a
    )
    insert into app.automation_triggers (organization_id, automation_id, kind, token_hash)
    select organization_id, id, 'webhook', app.webhook_token_hash(${token}) from a
    returning automation_id as id`
  await sql.end()
  return { token, automationId: hook!.id }
}

let sequence = 0
const nextDelivery = () => ++sequence

async function loadHttp(port: number, token: string, connections: number, seconds: number): Promise<Figures> {
  const result = await autocannon({
    url: `http://127.0.0.1:${port}/api/automations/webhook/${token}`, connections, duration: seconds,
    requests: [{
      method: 'POST',
      setupRequest: (request) => {
        const n = nextDelivery()
        return { ...request, body: JSON.stringify({ n }),
                 headers: { ...request.headers, 'content-type': 'application/json', 'idempotency-key': `bench-${n}` } }
      },
    }],
  })
  return { rps: result.requests.average, p50: result.latency.p50, p99: result.latency.p99, errors: result.non2xx + result.errors }
}

// The statement the route sends in the steady state, with the same arguments, from
// `connections` concurrent callers over a pool of the server's size.
async function loadFloor(url: string, token: string, automationId: string, scale: number, connections: number, seconds: number): Promise<Figures> {
  const sql = requestPool(url, loadConfig({ ...process.env, DATABASE_URL: url }).DATABASE_POOL_SIZE)
  const budgets = rateBudgets(scale)
  const buckets = webhookBuckets(budgets)
  const tokenHash = sha256(token)
  const figures = await loadConcurrently(connections, seconds, async () => {
    const n = nextDelivery()
    const body = JSON.stringify({ n })
    const payload = JSON.parse(body) as unknown
    const args = {
      tokenHash, projectId: null, deliveryId: `bench-${n}`, bodyHash: sha256(body), payload,
      senderBucket: buckets.sender('127.0.0.1'),
      triggerBudget: { perMinute: budgets.webhookTrigger.perMinute, burst: budgets.webhookTrigger.burst },
      // The route checks the run input against the deployed version's inputs (none here).
      validated: { automationId, version: 1, issues: [] },
    }
    const [row] = await sql<{ outcome: { status?: number } }[]>`select app.webhook_deliver(${sql.json(args as never)}) as outcome`
    return row?.outcome.status === 202
  })
  await sql.end()
  return figures
}

// Statements per delivery once the route's cache knows the deployed version.
const statementsPerDelivery = (url: string, token: string, scale: number, deliveries: number) =>
  statementsPerRequest(url, scale, deliveries, async (serviceUrl) => {
    const n = nextDelivery()
    await fetch(`${serviceUrl}/api/automations/webhook/${token}`, {
      method: 'POST', headers: { 'content-type': 'application/json', 'idempotency-key': `bench-${n}` }, body: JSON.stringify({ n }),
    }).then((res) => res.arrayBuffer())
  })

async function checkpoint(url: string): Promise<void> {
  const sql = postgres(url, { max: 1, onnotice: () => {} })
  await sql`checkpoint`
  await sql.end()
}

// Starts a worker on the backlog the deliveries left and waits until it has run it
// all: how many runs it completed per second, from its start to the last finish.
async function drainBacklog(url: string, startWorker: () => ChildProcess, stop: (child: ChildProcess) => Promise<void>):
  Promise<WebhookFigures['runs']> {
  const sql = postgres(url, { max: 1, onnotice: () => {} })
  const [{ accepted } = { accepted: 0 }] = await sql<{ accepted: number }[]>`
    select count(*)::int as accepted from app.runs where started_via = 'webhook'`
  const began = new Date()
  const worker = startWorker()
  try {
    for (let i = 0; i < 3000; i++) {
      const [live] = await sql`select count(*)::int as n from app.runs where status in ('queued', 'running') and started_via = 'webhook'`
      if (live!.n === 0) break
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
  } finally {
    await stop(worker)
  }
  const [figures] = await sql<{ completed: number; span: number }[]>`
    select count(*) filter (where status = 'completed')::int as completed,
           extract(epoch from max(finished_at) - ${began}::timestamptz)::float8 as span
      from app.runs where started_via = 'webhook'`
  await sql.end()
  return { accepted, completed: figures!.completed, completedPerSecond: figures!.completed / Math.max(figures!.span ?? 1, 0.001) }
}

/**
 * Against a running API-only service on `port` (no worker: accepted runs wait in the
 * queue), then a worker process from startWorker on what was accepted.
 */
export async function benchWebhooks(url: string, port: number, scale: number, connections: number, seconds: number,
  startWorker: () => ChildProcess, stop: (child: ChildProcess) => Promise<void>): Promise<WebhookFigures> {
  const { token, automationId } = await deployHook(url)
  await loadHttp(port, token, connections, Math.min(5, seconds)) // warm-up: plans cached, pools filled
  // Each measurement starts after a checkpoint: the writes before it (the seeded
  // database, the other side's deliveries) would otherwise be flushed during it.
  await checkpoint(url)
  const http = await loadHttp(port, token, connections, seconds)
  await checkpoint(url)
  const floor = await loadFloor(url, token, automationId, scale, connections, seconds)
  const statements = await statementsPerDelivery(url, token, scale, 200)
  const runs = await drainBacklog(url, startWorker, stop)
  return { http, floor, statements, runs }
}
