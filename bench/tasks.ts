// Task creates by natural key (an upsert) at 32 connections, as a source system's sync
// sends them: POST /api/v1/projects/{id}/tasks for items that already exist, beside a
// floor that sends the server's statement (app.handle with task_create and the same
// arguments) through the request pool with no HTTP. Two mixes: every item resent
// unchanged (the steady state of a sync), and every item with a new title (each
// repeat writes).
import autocannon from 'autocannon'
import postgres from 'postgres'
import { requestPool } from '../server/core/db/connection.ts'
import { loadConfig } from '../server/core/config.ts'
import { rateBudgets } from '../server/auth/rate-budgets.ts'
import { hashApiKey } from '../server/auth/credentials.ts'
import { callOperation } from '../server/transport/operation.ts'
import { loadConcurrently, statementsPerRequest, type Figures } from './measure.ts'

/** Items the sync cycles through: enough that 32 callers rarely touch the same task at once. */
const ITEMS = 2000

export interface TaskFigures {
  mix: 'unchanged' | 'changed'
  http: Figures
  floor: Figures
  statements: number
}

type Mix = TaskFigures['mix']

let sequence = 0
/** The next item of the sync; `changed` gives each repeat a title of its own. */
function nextItem(mix: Mix): Record<string, unknown> {
  const n = ++sequence
  const id = n % ITEMS
  return {
    externalSystem: 'jira', externalId: `BENCH-${id}`,
    title: mix === 'unchanged' ? `Item ${id}` : `Item ${id} (${n})`,
    description: 'Synced from the tracker', labels: ['bench', id % 2 ? 'odd' : 'even'], externalState: 'open',
  }
}

/** The project the sync writes to, with every item created once. */
export async function prepareTasks(url: string, port: number, key: string): Promise<string> {
  const sql = postgres(url, { max: 1, onnotice: () => {} })
  const [project] = await sql<{ id: string }[]>`select id from app.projects order by created_at limit 1`
  await sql.end()
  const path = `http://127.0.0.1:${port}/api/v1/projects/${project!.id}/tasks`
  for (let i = 0; i < ITEMS; i++) {
    const res = await fetch(path, { method: 'POST', headers: { authorization: `Bearer ${key}` }, body: JSON.stringify(nextItem('unchanged')) })
    if (res.status !== 201 && res.status !== 200) throw new Error(`seeding tasks: ${res.status} ${await res.text()}`)
  }
  return project!.id
}

async function loadHttp(port: number, key: string, projectId: string, mix: Mix, connections: number, seconds: number): Promise<Figures> {
  const result = await autocannon({
    url: `http://127.0.0.1:${port}/api/v1/projects/${projectId}/tasks`, connections, duration: seconds,
    requests: [{
      method: 'POST',
      setupRequest: (request) => ({ ...request, body: JSON.stringify(nextItem(mix)),
        headers: { ...request.headers, authorization: `Bearer ${key}`, 'content-type': 'application/json' } }),
    }],
  })
  return { rps: result.requests.average, p50: result.latency.p50, p99: result.latency.p99, errors: result.non2xx + result.errors }
}

async function loadFloor(url: string, key: string, projectId: string, mix: Mix, scale: number, connections: number,
  seconds: number): Promise<Figures> {
  const sql = requestPool(url, loadConfig({ ...process.env, DATABASE_URL: url }).DATABASE_POOL_SIZE)
  const budgets = rateBudgets(scale)
  const auth = { keyHash: hashApiKey(key), orgSlug: null, source: '127.0.0.1', buckets: [budgets.general],
                 authFailures: budgets.authFailures, read: false, rateScale: budgets.scale }
  const figures = await loadConcurrently(connections, seconds,
    async () => !(await callOperation(sql, auth, 'task_create', { ...nextItem(mix), id: projectId })).error)
  await sql.end()
  return figures
}

export async function benchTasks(url: string, port: number, key: string, scale: number, connections: number,
  seconds: number): Promise<TaskFigures[]> {
  const projectId = await prepareTasks(url, port, key)
  const figures: TaskFigures[] = []
  for (const mix of ['unchanged', 'changed'] as const) {
    await loadHttp(port, key, projectId, mix, connections, Math.min(5, seconds)) // warm-up
    const http = await loadHttp(port, key, projectId, mix, connections, seconds)
    const floor = await loadFloor(url, key, projectId, mix, scale, connections, seconds)
    const statements = await statementsPerRequest(url, scale, 200, async (serviceUrl) => {
      await fetch(`${serviceUrl}/api/v1/projects/${projectId}/tasks`, {
        method: 'POST', headers: { authorization: `Bearer ${key}` }, body: JSON.stringify(nextItem(mix)),
      }).then((res) => res.arrayBuffer())
    })
    figures.push({ mix, http, floor, statements })
  }
  return figures
}
