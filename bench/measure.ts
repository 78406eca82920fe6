// What every benchmark measures the same way: a floor (concurrent callers of one SQL
// statement with no HTTP), and the statements the service sends per request.
import { loadConfig } from '../server/core/config.ts'
import { startService } from '../server/service.ts'
import { createLogger } from '../server/core/log.ts'
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
