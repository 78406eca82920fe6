// `npm run soak`: the service as deployed (an API process and a worker process apart)
// under a steady mixed load for SOAK_SECONDS, to find what a short benchmark cannot:
// memory that grows, latency that grows with the tables, errors that come late, runs
// and answers that never settle.
//
//   npm run soak                          (600 s; embedded PostgreSQL unless DATABASE_URL is set)
//   SOAK_SECONDS=60 npm run soak          (a shorter soak; its memory verdict is inconclusive)
//   SOAK_RATE=50 SOAK_CONCURRENCY=16      (operations started per second, and in flight at most; the defaults)
//   BENCH_DATABASE=tale_soak_2            (the database it drops and makes; default tale_soak)
//   SOAK_PORT=3960                        (the API's port)
//
// The load is paced, not flat out: operations are due at SOAK_RATE per second, drawn
// from a weighted mix (reads over several families, writes that create, update and
// delete, run starts, webhook deliveries, chat sends), and at most SOAK_CONCURRENCY
// are in flight; when the service falls behind, the achieved rate says so. Chat sends
// go to a fake OpenAI-compatible provider on loopback, so the worker streams through
// the same client as with a real one. Contacts, tasks and folders are written as much
// as deleted (or cycle through a fixed set of keys); runs and messages accumulate, as
// they do in production.
//
// The first SOAK_WARMUP_SECONDS (default a tenth, at least 10 s) are left out of the
// latencies and of the memory trend. Exits 1 on any 5xx or transport error, any run or
// answer that did not settle successfully, or memory that grew.
import postgres from 'postgres'
import { seed } from '../server/admin/operations.ts'
import { ownerPool } from '../server/core/db/connection.ts'
import { fakeProvider } from '../test/lib/fake-provider.ts'
import { benchDatabaseName, benchServer, prepareDatabase } from './database.ts'
import { spawnService, startServer, stopService, type ServiceOptions } from './service.ts'
import { deployTrivial } from './runs.ts'
import { deployHook } from './webhooks.ts'
import { MemorySampler, memoryTrend, rssMiB, type MemoryTrend } from './soak-memory.ts'

const SECONDS = Number(process.env.SOAK_SECONDS ?? 600)
const RATE = Number(process.env.SOAK_RATE ?? 50)
const CONCURRENCY = Number(process.env.SOAK_CONCURRENCY ?? 16)
const WARM_UP = Number(process.env.SOAK_WARMUP_SECONDS ?? Math.max(10, SECONDS / 10))
const PORT = Number(process.env.SOAK_PORT ?? 3960)
const SAMPLE_SECONDS = 5
/** RSS rising faster than this over the second half of the soak is growth. */
const GROWTH_LIMIT = Number(process.env.SOAK_GROWTH_MIB_PER_MINUTE ?? 1)
/** How long runs and answers may take to settle once the load has stopped. */
const SETTLE_SECONDS = 180
const DATABASE = benchDatabaseName('tale_soak')
// Budgets high enough that the soak measures the service, not its limits.
const SCALE = 1_000_000
const PROJECTS = 100
/** Tasks are upserted by natural key over this many items, so the table stops growing. */
const TASK_ITEMS = 1000
/**
 * Contacts and folders kept at least: below, a delete creates instead. Reads and
 * updates take from the newest, deletes from the oldest, so that none reads what
 * another is deleting.
 */
const CONTACTS_KEPT = 200
const FOLDERS_KEPT = 50
const newest = <T>(items: T[], kept: number): T | undefined =>
  items[items.length - 1 - Math.floor(Math.random() * Math.min(items.length, kept / 2))]
/** Turns a thread takes before it is left for a new one: a conversation of a realistic length. */
const TURNS_PER_THREAD = 10
const MODEL = 'echo-model'

if (!(SECONDS > 0 && RATE > 0 && CONCURRENCY > 0 && WARM_UP < SECONDS)) {
  throw new Error('SOAK_SECONDS, SOAK_RATE and SOAK_CONCURRENCY must be positive, SOAK_WARMUP_SECONDS below SOAK_SECONDS')
}

// ---------------------------------------------------------------------------------
// What the operations share: the key, the base URL and what earlier operations made.

interface Outcome {
  status: number
  body: any
}

interface Thread {
  path: string
  turns: number
}

const state = {
  base: `http://127.0.0.1:${PORT}`,
  key: '',
  hookToken: '',
  projects: [] as string[],
  contacts: [] as string[],
  tasks: [] as { project: string; id: string }[],
  folders: [] as { project: string; id: string }[],
  runs: [] as string[],
  idleThreads: [] as Thread[],
  /** Answers sent and not yet seen settled, oldest first. */
  pendingReplies: [] as { thread: Thread; reply: string }[],
  threads: [] as Thread[],
  sequence: 0,
  runsAccepted: 0,
  deliveriesAccepted: 0,
  sendsAccepted: 0,
}

const pick = <T>(items: T[]): T | undefined => items[Math.floor(Math.random() * items.length)]
const next = () => ++state.sequence

async function call(method: string, path: string, body?: unknown, headers: Record<string, string> = {},
  authorized = true): Promise<Outcome> {
  const res = await fetch(`${state.base}${path}`, {
    method,
    headers: { ...(authorized ? { authorization: `Bearer ${state.key}` } : {}),
               ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  })
  const text = await res.text()
  return { status: res.status, body: text ? JSON.parse(text) : null }
}

// ---------------------------------------------------------------------------------
// The mix. Each operation is one HTTP request, named by its route; `weight` is its
// share of the load. Where an operation needs something that does not exist yet (a
// contact to delete), it does the operation that makes one instead, under that name.

interface Operation {
  name: string
  weight: number
  run: () => Promise<{ name?: string; outcome: Outcome }>
}

const project = () => pick(state.projects)!

async function createContact() {
  const n = next()
  const outcome = await call('POST', '/api/v1/contacts', {
    externalId: `soak-${n}`, email: `person.${n}@example.test`, name: `Person ${n}`, company: 'Acme',
    attributes: { plan: n % 2 ? 'team' : 'free', seats: n % 50 },
  })
  if (outcome.status === 201) state.contacts.push(outcome.body.contact.id)
  return { name: 'POST /contacts', outcome }
}

async function createFolder() {
  const projectId = project()
  const outcome = await call('POST', `/api/v1/projects/${projectId}/folders`, { name: `Folder ${next()}` })
  if (outcome.status === 201) state.folders.push({ project: projectId, id: outcome.body.folder.id })
  return { name: 'POST /projects/{id}/folders', outcome }
}

async function createThread(): Promise<{ name: string; outcome: Outcome }> {
  const outcome = await call('POST', '/api/v1/threads', {})
  if (outcome.status === 201) {
    const thread = { path: `/api/v1/threads/${outcome.body.id}`, turns: 0 }
    state.threads.push(thread)
    state.idleThreads.push(thread)
  }
  return { name: 'POST /threads', outcome }
}

const operations: Operation[] = [
  // Reads: 52 in 100.
  { name: 'GET /me', weight: 3, run: async () => ({ outcome: await call('GET', '/api/v1/me') }) },
  { name: 'GET /projects', weight: 4, run: async () => ({ outcome: await call('GET', '/api/v1/projects?limit=20') }) },
  { name: 'GET /automations', weight: 2, run: async () => ({ outcome: await call('GET', '/api/v1/automations') }) },
  { name: 'GET /runs', weight: 6, run: async () => ({ outcome: await call('GET', '/api/v1/runs?limit=20') }) },
  { name: 'GET /automations/{name}/runs', weight: 3,
    run: async () => ({ outcome: await call('GET', '/api/v1/automations/bench__trivial/runs?limit=20') }) },
  { name: 'GET /runs/{id}', weight: 5, run: async () => {
    // A recent run: the one a client polls after starting it.
    const id = state.runs[state.runs.length - 1 - Math.floor(Math.random() * Math.min(50, state.runs.length))]
    if (!id) return { name: 'GET /runs', outcome: await call('GET', '/api/v1/runs?limit=20') }
    return { outcome: await call('GET', `/api/v1/runs/${id}`) }
  } },
  { name: 'GET /projects/{id}/tasks', weight: 4,
    run: async () => ({ outcome: await call('GET', `/api/v1/projects/${project()}/tasks?limit=20`) }) },
  { name: 'GET /projects/{id}/tasks/{taskId}', weight: 3, run: async () => {
    const task = pick(state.tasks)
    if (!task) return { name: 'GET /projects/{id}/tasks', outcome: await call('GET', `/api/v1/projects/${project()}/tasks?limit=20`) }
    return { outcome: await call('GET', `/api/v1/projects/${task.project}/tasks/${task.id}`) }
  } },
  { name: 'GET /contacts', weight: 4, run: async () => ({ outcome: await call('GET', '/api/v1/contacts?limit=20') }) },
  { name: 'GET /contacts/{id}', weight: 3, run: async () => {
    const id = newest(state.contacts, CONTACTS_KEPT)
    if (!id) return { name: 'GET /contacts', outcome: await call('GET', '/api/v1/contacts?limit=20') }
    return { outcome: await call('GET', `/api/v1/contacts/${id}`) }
  } },
  { name: 'GET /projects/{id}/folders', weight: 3,
    run: async () => ({ outcome: await call('GET', `/api/v1/projects/${project()}/folders`) }) },
  { name: 'GET /threads', weight: 3, run: async () => ({ outcome: await call('GET', '/api/v1/threads?limit=20') }) },
  { name: 'GET /threads/{id}/messages', weight: 3, run: async () => {
    const thread = pick(state.threads)
    if (!thread) return { name: 'GET /threads', outcome: await call('GET', '/api/v1/threads?limit=20') }
    return { outcome: await call('GET', `${thread.path}/messages?limit=20`) }
  } },
  // The client of a chat polls the answer of its last send; a settled answer frees its
  // thread for the next send (a thread takes one turn at a time).
  { name: 'GET /threads/{id}/messages/{messageId}', weight: 6, run: async () => {
    const pending = state.pendingReplies.shift()
    if (!pending) return { name: 'GET /threads', outcome: await call('GET', '/api/v1/threads?limit=20') }
    const outcome = await call('GET', `${pending.thread.path}/messages/${pending.reply}`)
    if (outcome.status === 200 && !['pending', 'streaming'].includes(outcome.body.status)) {
      if (pending.thread.turns < TURNS_PER_THREAD) state.idleThreads.push(pending.thread)
    } else {
      state.pendingReplies.push(pending)
    }
    return { outcome }
  } },
  // Writes: 28 in 100. Contacts and folders are deleted as often as created.
  { name: 'POST /contacts', weight: 5, run: createContact },
  { name: 'PATCH /contacts/{id}', weight: 4, run: async () => {
    const id = newest(state.contacts, CONTACTS_KEPT)
    if (!id) return createContact()
    return { outcome: await call('PATCH', `/api/v1/contacts/${id}`, { company: `Company ${next()}` }) }
  } },
  { name: 'DELETE /contacts/{id}', weight: 5, run: async () => {
    if (state.contacts.length <= CONTACTS_KEPT) return createContact()
    const id = state.contacts.shift()!
    return { outcome: await call('DELETE', `/api/v1/contacts/${id}`) }
  } },
  { name: 'POST /projects/{id}/tasks', weight: 5, run: async () => {
    const n = next()
    const item = n % TASK_ITEMS
    const projectId = state.projects[item % state.projects.length]!
    const outcome = await call('POST', `/api/v1/projects/${projectId}/tasks`, {
      externalSystem: 'jira', externalId: `SOAK-${item}`, title: `Item ${item} (${n})`,
      description: 'Synced from the tracker', labels: ['soak'], externalState: 'open',
    })
    if (outcome.status === 201) state.tasks.push({ project: projectId, id: outcome.body.task.id })
    return { outcome }
  } },
  { name: 'PATCH /projects/{id}/tasks/{taskId}', weight: 3, run: async () => {
    const task = pick(state.tasks)
    if (!task) return { name: 'GET /projects/{id}/tasks', outcome: await call('GET', `/api/v1/projects/${project()}/tasks?limit=20`) }
    const status = pick(['todo', 'in_progress', 'in_review', 'done'])!
    return { outcome: await call('PATCH', `/api/v1/projects/${task.project}/tasks/${task.id}`, { status }) }
  } },
  { name: 'POST /projects/{id}/folders', weight: 3, run: createFolder },
  { name: 'DELETE /projects/{id}/folders/{folderId}', weight: 3, run: async () => {
    if (state.folders.length <= FOLDERS_KEPT) return createFolder()
    const folder = state.folders.shift()!
    return { outcome: await call('DELETE', `/api/v1/projects/${folder.project}/folders/${folder.id}`) }
  } },
  // Runs, webhooks and chat: 20 in 100.
  { name: 'POST /automations/{name}/runs', weight: 8, run: async () => {
    const outcome = await call('POST', '/api/v1/automations/bench__trivial/runs', { input: { n: next() } })
    if (outcome.status === 202) {
      state.runs.push(outcome.body.runId)
      state.runsAccepted++
    }
    return { outcome }
  } },
  { name: 'POST /automations/webhook/{token}', weight: 7, run: async () => {
    const n = next()
    const outcome = await call('POST', `/api/automations/webhook/${state.hookToken}`, { n }, { 'idempotency-key': `soak-${n}` }, false)
    if (outcome.status === 202) {
      state.runs.push(outcome.body.runId)
      state.deliveriesAccepted++
    }
    return { outcome }
  } },
  { name: 'POST /threads/{id}/messages', weight: 5, run: async () => {
    const thread = state.idleThreads.shift()
    if (!thread) return createThread()
    thread.turns++
    const n = next()
    const outcome = await call('POST', `${thread.path}/messages`, { content: `Question ${n}: how is the weather today?`, model: MODEL },
      { 'idempotency-key': `soak-${n}` })
    if (outcome.status === 202) {
      state.pendingReplies.push({ thread, reply: outcome.body.replyMessageId })
      state.sendsAccepted++
    } else {
      state.idleThreads.push(thread)
    }
    return { outcome }
  } },
]

const totalWeight = operations.reduce((sum, op) => sum + op.weight, 0)
function drawOperation(): Operation {
  let r = Math.random() * totalWeight
  for (const op of operations) if ((r -= op.weight) < 0) return op
  return operations[operations.length - 1]!
}

// ---------------------------------------------------------------------------------
// The load, and what it records of each operation.

interface Sample {
  name: string
  /** Seconds since the load began, when the request started. */
  at: number
  ms: number
  /** The HTTP status, or 0 for a transport error. */
  status: number
}

async function drive(seconds: number, log: (line: string) => void): Promise<{ samples: Sample[]; transportErrors: string[] }> {
  const samples: Sample[] = []
  const transportErrors: string[] = []
  const errorBodies = new Map<string, string>()
  const began = performance.now()
  const end = began + seconds * 1000
  let issued = 0
  let nextReport = 30
  const worker = async () => {
    for (;;) {
      // Each operation takes the next slot of the schedule: the load stays steady
      // whatever the latency, until every worker is busy.
      const due = began + issued++ * 1000 / RATE
      if (due >= end || performance.now() >= end) return
      const wait = due - performance.now()
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait))
      const op = drawOperation()
      const started = performance.now()
      try {
        const { name, outcome } = await op.run()
        samples.push({ name: name ?? op.name, at: (started - began) / 1000, ms: performance.now() - started, status: outcome.status })
        const kind = `${name ?? op.name} ${outcome.status}`
        if (outcome.status >= 400 && !errorBodies.has(kind)) {
          errorBodies.set(kind, JSON.stringify(outcome.body))
          log(`first ${kind}: ${JSON.stringify(outcome.body).slice(0, 300)}`)
        }
      } catch (error) {
        samples.push({ name: op.name, at: (started - began) / 1000, ms: performance.now() - started, status: 0 })
        if (transportErrors.length < 20) transportErrors.push(`${op.name}: ${(error as Error).message}`)
      }
      const elapsed = (performance.now() - began) / 1000
      if (elapsed >= nextReport) {
        nextReport += 30
        log(`${elapsed.toFixed(0)} s: ${samples.length} operations, ${samples.filter((s) => s.status >= 500 || s.status === 0).length} 5xx or transport errors`)
      }
    }
  }
  await Promise.all(Array.from({ length: CONCURRENCY }, worker))
  return { samples, transportErrors }
}

// ---------------------------------------------------------------------------------
// Figures.

const percentile = (sorted: number[], q: number) =>
  sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!
const ms = (value: number) => Number.isNaN(value) ? '' : value < 10 ? value.toFixed(1) : value.toFixed(0)

interface OperationFigures {
  name: string
  count: number
  perSecond: number
  p50: number
  p99: number
  /** p50 and p99 in the first and the last third of the measured window, and how many samples each third has at least. */
  p50First: number
  p50Last: number
  p99First: number
  p99Last: number
  perThird: number
  errors: Map<number, number>
}

function figuresOf(name: string, samples: Sample[], from: number, to: number): OperationFigures {
  const measured = samples.filter((s) => s.at >= from)
  const latencies = measured.map((s) => s.ms).sort((a, b) => a - b)
  const third = (to - from) / 3
  const firstThird = measured.filter((s) => s.at < from + third).map((s) => s.ms).sort((a, b) => a - b)
  const lastThird = measured.filter((s) => s.at >= to - third).map((s) => s.ms).sort((a, b) => a - b)
  const errors = new Map<number, number>()
  // Errors over the whole soak, warm-up included: a 5xx is one whenever it comes.
  for (const s of samples) if (s.status === 0 || s.status >= 400) errors.set(s.status, (errors.get(s.status) ?? 0) + 1)
  return {
    name, count: measured.length, perSecond: measured.length / (to - from),
    p50: percentile(latencies, 0.5), p99: percentile(latencies, 0.99),
    p50First: percentile(firstThird, 0.5), p50Last: percentile(lastThird, 0.5),
    p99First: percentile(firstThird, 0.99), p99Last: percentile(lastThird, 0.99),
    perThird: Math.min(firstThird.length, lastThird.length), errors,
  }
}

/**
 * A p99 that at least doubled from the first third to the last, by more than 20 ms and
 * by half as much again as every operation's together did (on a shared machine the
 * others' load moves them all), over at least 200 samples in each third (below, a p99
 * is the second or third slowest request and one stall decides it).
 */
const p99Grew = (f: OperationFigures, overall: OperationFigures) =>
  f.perThird >= 200 && f.p99Last > 2 * f.p99First && f.p99Last - f.p99First > 20 &&
  f.p99Last / f.p99First > 1.5 * (overall.p99Last / overall.p99First)

interface Settlement {
  runs: Map<string, number>
  answers: Map<string, number>
  runsStarted: number
  answersSent: number
  seconds: number
}

// Waits until no run is queued or running and no answer pending or streaming, then
// counts them by status: every run the load started, every answer it asked for.
async function settle(url: string): Promise<Settlement> {
  const sql = postgres(url, { max: 1, onnotice: () => {} })
  const began = performance.now()
  try {
    for (;;) {
      const [live] = await sql<{ runs: number; answers: number }[]>`
        select (select count(*) from app.runs where status in ('queued', 'running'))::int as runs,
               (select count(*) from app.thread_messages where role = 'assistant' and status in ('pending', 'streaming'))::int as answers`
      if ((live!.runs === 0 && live!.answers === 0) || performance.now() - began > SETTLE_SECONDS * 1000) break
      await new Promise((resolve) => setTimeout(resolve, 500))
    }
    const runs = await sql<{ status: string; n: number }[]>`select status, count(*)::int as n from app.runs group by status order by status`
    const answers = await sql<{ status: string; n: number }[]>`
      select status, count(*)::int as n from app.thread_messages where role = 'assistant' group by status order by status`
    return {
      runs: new Map(runs.map((r) => [r.status, r.n])), answers: new Map(answers.map((r) => [r.status, r.n])),
      runsStarted: runs.reduce((sum, r) => sum + r.n, 0), answersSent: answers.reduce((sum, r) => sum + r.n, 0),
      seconds: (performance.now() - began) / 1000,
    }
  } finally {
    await sql.end()
  }
}

/** Rows and sizes of the tables the load grows, at the end. */
async function tableSizes(url: string): Promise<{ table: string; rows: number; mib: number }[]> {
  const sql = postgres(url, { max: 1, onnotice: () => {} })
  try {
    const tables = ['app.runs', 'app.thread_messages', 'app.threads', 'app.contacts', 'app.tasks', 'app.folders',
                    'app.webhook_deliveries', 'graphile_worker._private_jobs']
    const rows: { table: string; rows: number; mib: number }[] = []
    for (const table of tables) {
      const [exists] = await sql<{ ok: boolean }[]>`select to_regclass(${table}) is not null as ok`
      if (!exists!.ok) continue
      // The names are the constants above, not input.
      const [row] = await sql.unsafe<{ rows: number; bytes: string }[]>(
        `select (select count(*) from ${table})::int as rows, pg_total_relation_size('${table}'::regclass)::text as bytes`)
      rows.push({ table, rows: row!.rows, mib: Number(row!.bytes) / 1024 / 1024 })
    }
    return rows
  } finally {
    await sql.end()
  }
}

function report(operationFigures: OperationFigures[], overall: OperationFigures, memory: Record<string, MemoryTrend>,
  settlement: Settlement, tables: Awaited<ReturnType<typeof tableSizes>>, measuredSeconds: number, version: string): string {
  const errorText = (errors: Map<number, number>) =>
    [...errors].sort(([a], [b]) => a - b).map(([status, n]) => `${n}× ${status === 0 ? 'transport' : status}`).join(', ')
  const row = (f: OperationFigures) =>
    `| ${f.name} | ${f.count} | ${f.perSecond.toFixed(1)} | ${ms(f.p50)} | ${ms(f.p99)} | ${ms(f.p50First)} → ${ms(f.p50Last)} | ${ms(f.p99First)} → ${ms(f.p99Last)}${p99Grew(f, overall) ? ' (grew)' : ''} | ${errorText(f.errors)} |`
  const byStatus = (counts: Map<string, number>) => [...counts].map(([status, n]) => `${n} ${status}`).join(', ') || 'none'
  const lines = [
    `Soak of ${SECONDS} s (${WARM_UP} s warm-up left out of the latencies and the memory trend), target ${RATE} operations/s at most ${CONCURRENCY} in flight; an API process and a worker process; PostgreSQL ${version}, Node ${process.version}`,
    '',
    `| operation | count | per s | p50 ms | p99 ms | p50 first → last third | p99 first → last third | errors (whole soak) |`,
    '|---|---|---|---|---|---|---|---|',
    ...operationFigures.map(row),
    row(overall).replace(`| ${overall.name} |`, `| **all** |`),
    '',
    `Achieved ${overall.perSecond.toFixed(1)} operations/s over the ${measuredSeconds.toFixed(0)} s measured (target ${RATE}).`,
    '',
    '| process | RSS idle MiB | after warm-up | end | peak | net rise | slope over the second half MiB/min | samples there | verdict |',
    '|---|---|---|---|---|---|---|---|---|',
    ...Object.entries(memory).map(([name, m]) =>
      `| ${name} | ${m.idleMiB.toFixed(0)} | ${m.startMiB.toFixed(0)} | ${m.endMiB.toFixed(0)} | ${m.peakMiB.toFixed(0)} | ${m.netRiseMiB.toFixed(1)} | ${m.slopeMiBPerMinute.toFixed(2)} | ${m.samplesInSecondHalf} | ${m.verdict} |`),
    '',
    `Runs started (REST and webhook): ${settlement.runsStarted}: ${byStatus(settlement.runs)}.`,
    `Chat answers asked for: ${settlement.answersSent}: ${byStatus(settlement.answers)}.`,
    `Settled ${settlement.seconds.toFixed(1)} s after the load stopped.`,
    '',
    '| table | rows at the end | MiB |',
    '|---|---|---|',
    ...tables.map((t) => `| ${t.table} | ${t.rows} | ${t.mib.toFixed(1)} |`),
    '',
  ]
  return lines.join('\n')
}

// ---------------------------------------------------------------------------------

const log = (line: string) => process.stderr.write(`soak: ${line}\n`)
const teardowns: (() => Promise<void>)[] = []
const server = await benchServer()
let failed = false
try {
  const provider = await fakeProvider({ teardown: (close) => { teardowns.push(close) } })
  const { url, key } = await prepareDatabase(server.baseUrl, DATABASE, PROJECTS)
  state.key = key
  const owner = ownerPool(url, 1)
  await seed(owner, {
    organizations: [], users: [], teams: [], projects: [], secrets: [], grants: [],
    providers: [{ org: 'bench', slug: 'fake', kind: 'openai-compatible', baseUrl: provider.url, apiKey: 'sk-fake' }],
    models: [{ org: 'bench', id: MODEL, providerSlug: 'fake', contextWindow: 8000, maxOutputTokens: null, default: true }],
  })
  state.projects = (await owner<{ id: string }[]>`select id from app.projects order by created_at limit 20`).map((p) => p.id)
  const [{ v: version } = { v: '' }] = await owner<{ v: string }[]>`select current_setting('server_version') as v`
  await owner.end()
  await deployTrivial(url)
  state.hookToken = (await deployHook(url)).token

  // No object store: the load touches no file, and the processes measured are the
  // service's alone.
  const options: ServiceOptions = { port: PORT, rateScale: SCALE, env: { S3_ENDPOINT: 'none' } }
  const api = await startServer(url, 'api', options)
  const worker = spawnService(url, 'worker', options)
  teardowns.push(() => stopService(worker), () => stopService(api))
  // Their logs go to stderr, which they share with the soak; their stdout is a pipe,
  // read so that nothing written there over a long soak can fill it and block them.
  for (const child of [api, worker]) child.stdout!.on('data', (chunk: Buffer) => process.stderr.write(chunk))
  await new Promise((resolve) => setTimeout(resolve, 3000)) // the worker's start-up, before its idle RSS
  const pids = { api: api.pid!, worker: worker.pid! }
  const idle = Object.fromEntries(Object.entries(pids).map(([name, pid]) => [name, rssMiB(pid) ?? NaN]))

  log(`load for ${SECONDS} s at ${RATE} operations/s, at most ${CONCURRENCY} in flight; API pid ${pids.api}, worker pid ${pids.worker}`)
  const sampler = new MemorySampler(pids, SAMPLE_SECONDS)
  sampler.start()
  const { samples, transportErrors } = await drive(SECONDS, log)
  sampler.stop()
  log('load done; waiting for runs and answers to settle')
  const settlement = await settle(url)
  const tables = await tableSizes(url)

  const names = [...new Set(operations.map((op) => op.name)), 'POST /threads']
  const operationFigures = names
    .map((name) => figuresOf(name, samples.filter((s) => s.name === name), WARM_UP, SECONDS))
    .filter((f) => f.count > 0 || f.errors.size > 0)
  const overall = figuresOf('all', samples, WARM_UP, SECONDS)
  const memory = Object.fromEntries(Object.keys(pids).map((name) =>
    [name, memoryTrend(idle[name]!, sampler.samples.get(name)!, WARM_UP, GROWTH_LIMIT)]))
  process.stdout.write(report(operationFigures, overall, memory, settlement, tables, SECONDS - WARM_UP, version))

  const serverErrors = samples.filter((s) => s.status >= 500 || s.status === 0).length
  const badRuns = settlement.runsStarted - (settlement.runs.get('completed') ?? 0)
  const badAnswers = settlement.answersSent - (settlement.answers.get('complete') ?? 0)
  const accepted = state.runsAccepted + state.deliveriesAccepted
  const problems = [
    serverErrors > 0 && `${serverErrors} 5xx or transport errors`,
    ...transportErrors,
    badRuns > 0 && `${badRuns} runs did not complete`,
    settlement.runsStarted !== accepted && `${accepted} runs accepted, ${settlement.runsStarted} in the database`,
    badAnswers > 0 && `${badAnswers} answers did not complete`,
    settlement.answersSent !== state.sendsAccepted && `${state.sendsAccepted} sends accepted, ${settlement.answersSent} answers in the database`,
    ...Object.entries(memory).filter(([, m]) => m.verdict === 'grew').map(([name]) => `the ${name}'s RSS grew`),
  ].filter((p): p is string => typeof p === 'string')
  const slower = operationFigures.filter((f) => p99Grew(f, overall)).map((f) => f.name)
  if (slower.length > 0) log(`p99 grew from the first third to the last beyond the whole load's: ${slower.join(', ')}`)
  const clientErrors = samples.filter((s) => s.status >= 400 && s.status < 500).length
  if (clientErrors > 0) log(`${clientErrors} 4xx answers (see the errors column)`)
  if (problems.length > 0) {
    failed = true
    log(`FAILED: ${problems.join('; ')}`)
  } else {
    log('passed: no 5xx, every run and answer completed, no memory growth')
  }
} finally {
  for (const close of teardowns.reverse()) await close()
  await server.stop()
}
process.exit(failed ? 1 : 0)
