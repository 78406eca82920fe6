import * as v from 'valibot'
import type { Sql } from '../core/db/connection.ts'
import type { Route } from './route.ts'

const startedAt = Date.now()

async function databaseAnswers(sql: Sql): Promise<boolean> {
  try {
    await sql`select 1`.execute()
    return true
  } catch {
    return false
  }
}

export function healthRoutes(requests: Sql, version: string): Route[] {
  const status = async () => {
    const database = await databaseAnswers(requests)
    return {
      status: database ? 'ok' : 'degraded', version,
      uptimeSeconds: Math.floor((Date.now() - startedAt) / 1000),
      components: { api: 'up', database: database ? 'up' : 'down' },
    }
  }
  const statusShape = v.strictObject({
    status: v.picklist(['ok', 'degraded']), version: v.string(), uptimeSeconds: v.pipe(v.number(), v.integer()),
    components: v.strictObject({ api: v.literal('up'), database: v.picklist(['up', 'down']) }),
  })
  return [
    {
      kind: 'keyless', method: 'GET', path: '/health', tag: 'Health', summary: 'The HTTP front is running',
      response: v.strictObject({ status: v.literal('ok') }),
      handle: async () => ({ status: 200, body: { status: 'ok' } }),
    },
    {
      kind: 'keyless', method: 'GET', path: '/api/health', tag: 'Health',
      summary: 'The platform is up and its database answers (503 otherwise)',
      response: v.strictObject({ status: v.literal('ok') }),
      otherResponses: { 503: { description: 'The database does not answer', body: v.strictObject({ status: v.literal('unavailable') }) } },
      handle: async () => (await databaseAnswers(requests)
        ? { status: 200, body: { status: 'ok' } }
        : { status: 503, body: { status: 'unavailable' } }),
    },
    {
      kind: 'keyless', method: 'GET', path: '/status.json', tag: 'Health', summary: 'Component status as JSON',
      response: statusShape,
      handle: async () => ({ status: 200, body: await status() }),
    },
    {
      kind: 'keyless', method: 'GET', path: '/status', tag: 'Health', summary: 'Component status',
      response: statusShape,
      handle: async () => ({ status: 200, body: await status() }),
    },
  ]
}
