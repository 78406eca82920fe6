// What every benchmark measures the same way: a floor (concurrent callers of one SQL
// statement with no HTTP), and the statements the service sends per request.
import { loadConfig } from '../server/core/config.ts'
import { startService } from '../server/service.ts'
import { createLogger } from '../server/core/log.ts'
import http from 'node:http'
import postgres from 'postgres'
import { generateApiKey, hashApiKey } from '../server/auth/credentials.ts'

export interface Figures { rps: number; p50: number; p99: number; errors: number }

/**
 * `connections` callers each calling `call` in a loop for `seconds`; `call` answers
 * whether the statement succeeded. Latencies in ms, rounded to 0.01.
 */
export async function loadConcurrently(connections: number, seconds: number, call: () => Promise<boolean>): Promise<Figures> {
  const latencies: number[] = []
  let errors = 0
  const until = performance.now() + seconds * 1000
  await Promise.all(Array.from({ length: connections }, async () => {
    while (performance.now() < until) {
      const began = performance.now()
      if (!await call()) errors++
      latencies.push(performance.now() - began)
    }
  }))
  latencies.sort((a, b) => a - b)
  const at = (q: number) => Math.round(latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))]! * 100) / 100
  return { rps: latencies.length / seconds, p50: at(0.5), p99: at(0.99), errors }
}

/**
 * Each figure the median of its rounds' (taken figure by figure, as rounds vary
 * independently; of an even number, the mean of the middle two).
 */
export function medianFigures(rounds: readonly Figures[]): Figures {
  const median = (pick: (f: Figures) => number) => {
    const sorted = rounds.map(pick).sort((a, b) => a - b)
    const middle = sorted.length / 2
    return Number.isInteger(middle) ? Math.round((sorted[middle - 1]! + sorted[middle]!) / 2 * 100) / 100 : sorted[Math.floor(middle)]!
  }
  return { rps: median((f) => f.rps), p50: median((f) => f.p50), p99: median((f) => f.p99), errors: rounds.reduce((n, f) => n + f.errors, 0) }
}

/**
 * Statements an in-process instance sends per request, counted at its driver: each
 * is one round trip to PostgreSQL. The first request (connections opening, caches
 * filling) is not counted.
 */
export async function statementsPerRequest(url: string, scale: number, requests: number,
  send: (serviceUrl: string) => Promise<void>): Promise<number> {
  let statements = 0
  const config = loadConfig({ DATABASE_URL: url, PORT: '0', LOG_LEVEL: 'silent', RATE_LIMIT_SCALE: String(scale) })
  const service = await startService(config, url, { port: 0, log: createLogger('silent'), onQuery: () => { statements++ } })
  try {
    await send(service.url)
    statements = 0
    for (let i = 0; i < requests; i++) await send(service.url)
  } finally {
    await service.close()
  }
  return statements / requests
}

/**
 * A new member of the bench organization with `role`, and an API key of theirs, made
 * by the operator functions the admin CLI's seed calls.
 */
export async function memberKey(url: string, email: string, role: 'member' | 'editor' | 'developer' | 'admin'): Promise<string> {
  const key = generateApiKey()
  const sql = postgres(url, { max: 1, onnotice: () => {} })
  await sql`
    with u as (select app.operator_user_create(${email}, ${email}, null, true) as id),
         m as (select u.id, app.operator_member_add(app.operator_org_id('bench'), u.id, ${role}, false) from u)
    select app.operator_key_create(m.id, 'bench', ${hashApiKey(key)}, null) from m`
  await sql.end()
  return key
}

/**
 * A client that POSTs JSON bodies to one service over kept-alive sockets, as a
 * production client with a connection pool does: node:http costs the bench 0.3-0.5 ms
 * of CPU a request against 1.7-1.9 ms for fetch, CPU the service under test
 * shares on a two-core machine. Resolves with the status once the answer is read.
 */
export function jsonPoster(base: string, sockets: number): { post: (path: string, body: string | Buffer) => Promise<number>; close: () => void } {
  const agent = new http.Agent({ keepAlive: true, maxSockets: sockets })
  const { hostname, port } = new URL(base)
  const post = (path: string, body: string | Buffer) => new Promise<number>((resolve, reject) => {
    const request = http.request({ agent, hostname, port, path, method: 'POST',
      headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } }, (response) => {
      response.on('data', () => {})
      response.on('end', () => resolve(response.statusCode ?? 0))
      response.on('error', reject)
    })
    request.on('error', reject)
    request.end(body)
  })
  return { post, close: () => agent.destroy() }
}
