// `npm run bench`: the API under load beside a floor that runs the same SQL through
// the same driver with no HTTP. Seeds an organization with 10,000 projects in a
// database of its own, then prints a Markdown table for BENCHMARKS.md.
//
//   npm run bench                      (embedded PostgreSQL unless DATABASE_URL is set)
//   BENCH_DURATION=20 npm run bench    (seconds per measurement; default 10)
//   BENCH_ONLY=runs npm run bench      (the run engine alone)
//   BENCH_ONLY=webhooks npm run bench  (webhook deliveries alone)
//   BENCH_ONLY=tasks npm run bench     (task creates by natural key alone)
//   BENCH_ONLY=chat npm run bench      (chat sends and their first streamed part alone)
//   BENCH_ONLY=knowledge npm run bench (the indexing service: documents indexed, search)
//   BENCH_ONLY=contacts npm run bench  (the contact bulk import of 10,000 rows)
//   BENCH_ONLY=crawler npm run bench   (a website of 2,000 pages crawled by the worker)
//   BENCH_LOG_LEVEL=info npm run bench (the service logs each request, as deployed)
//   BENCH_DATABASE=tale_bench_2 npm run bench (the database it drops and makes; default tale_bench)
//   BENCH_SERVICE_NODE_ARGS='--cpu-prof --cpu-prof-dir=.data/prof' npm run bench (Node options of the service under test)
import type { ChildProcess } from 'node:child_process'
import postgres from 'postgres'
import autocannon from 'autocannon'
import { requestPool } from '../server/core/db/connection.ts'
import { hashApiKey } from '../server/auth/credentials.ts'
import { rateBudgets } from '../server/auth/rate-budgets.ts'
import { loadConfig } from '../server/core/config.ts'
import { callOperation } from '../server/transport/operation.ts'
import { benchDatabaseName, benchServer, prepareDatabase } from './database.ts'
import * as service from './service.ts'
import { benchEmptyJobs, benchRuns, deployTrivial } from './runs.ts'
import { benchWebhooks, type WebhookFigures } from './webhooks.ts'
import { benchTasks, type TaskFigures } from './tasks.ts'
import { benchChat, type ChatFigures } from './chat.ts'
import { benchKnowledge, type KnowledgeFigures } from './knowledge.ts'
import { benchContacts, type ContactFigures } from './contacts.ts'
import { benchCrawler, CRAWLER_ENV, type CrawlerFigures } from './crawler.ts'
import { loadConcurrently, statementsPerRequest, type Figures } from './measure.ts'

const DURATION = Number(process.env.BENCH_DURATION ?? 10)
const CONNECTIONS = 32
const PROJECTS = 10_000
const PORT = Number(process.env.BENCH_PORT ?? 3900)
// Budgets high enough that the benchmark measures the service, not its limits.
const SCALE = 1_000_000
// The worker's concurrency in the service under test.
const WORKER_CONCURRENCY = Number(process.env.WORKER_CONCURRENCY ?? 8)
const DATABASE = benchDatabaseName('tale_bench')

const spawnService = (url: string, mode: 'all' | 'api' | 'worker', env: Record<string, string> = {}, log = false): ChildProcess =>
  service.spawnService(url, mode, { port: PORT, rateScale: SCALE, env, log })
const stopService = service.stopService
const startServer = (url: string, mode: 'all' | 'api' = 'all', env: Record<string, string> = {}, log = false): Promise<ChildProcess> =>
  service.startServer(url, mode, { port: PORT, rateScale: SCALE, env, log })

async function loadHttp(path: string, key: string): Promise<Figures> {
  const result = await autocannon({
    url: `http://127.0.0.1:${PORT}${path}`, connections: CONNECTIONS, duration: DURATION,
    headers: { authorization: `Bearer ${key}` },
  })
  return { rps: result.requests.average, p50: result.latency.p50, p99: result.latency.p99, errors: result.non2xx + result.errors }
}

// The floor: the statement the server sends for this operation, from 32 concurrent
// callers over a pool of the server's size, with no HTTP in between.
async function loadFloor(url: string, key: string, operation: string, args: object | null): Promise<Figures> {
  const sql = requestPool(url, loadConfig({ ...process.env, DATABASE_URL: url }).DATABASE_POOL_SIZE)
  const budgets = rateBudgets(SCALE)
  const auth = { keyHash: hashApiKey(key), orgSlug: null, source: '127.0.0.1', buckets: [budgets.general],
                 authFailures: budgets.authFailures, read: true }
  const figures = await loadConcurrently(CONNECTIONS, DURATION,
    async () => !(await callOperation(sql, auth, operation, args)).error)
  await sql.end()
  return figures
}

const statementsOf = (url: string, path: string, key: string, requests: number) =>
  statementsPerRequest(url, SCALE, requests, async (serviceUrl) => {
    await fetch(`${serviceUrl}${path}`, { headers: { authorization: `Bearer ${key}` } }).then((res) => res.arrayBuffer())
  })

const database = await benchServer()
const { url, key } = await prepareDatabase(database.baseUrl, DATABASE, PROJECTS)
let server = await startServer(url)
const only = process.env.BENCH_ONLY
try {
  const rows: string[] = []
  const cases = [
    { path: '/api/v1/me', operation: 'me', args: {} },
    { path: '/api/v1/projects?limit=20', operation: 'projects_list', args: { limit: 20 } },
  ]
  for (const c of only ? [] : cases) {
    await loadHttp(c.path, key) // warm-up: plans cached, pools filled
    const http = await loadHttp(c.path, key)
    const floor = await loadFloor(url, key, c.operation, c.args)
    const statements = await statementsOf(url, c.path, key, 200)
    rows.push(`| GET ${c.path} | ${http.rps.toFixed(0)} | ${http.p50} | ${http.p99} | ${floor.rps.toFixed(0)} | ${floor.p50} | ${floor.p99} | ${(http.rps / floor.rps * 100).toFixed(0)}% | ${statements.toFixed(2)} | ${http.errors + floor.errors} |`)
  }
  let runs: Awaited<ReturnType<typeof benchRuns>> | null = null
  let emptyJobs = 0
  if (!only || only === 'runs') {
    await deployTrivial(url)
    await benchRuns(url, PORT, key, CONNECTIONS, Math.min(5, DURATION)) // warm-up
    runs = await benchRuns(url, PORT, key, CONNECTIONS, DURATION)
    emptyJobs = await benchEmptyJobs(url, 5000, WORKER_CONCURRENCY)
  }
  let tasks: TaskFigures[] = []
  if (!only || only === 'tasks') tasks = await benchTasks(url, PORT, key, SCALE, CONNECTIONS, DURATION)
  // Against the service with its worker, before the webhooks stop it.
  let chat: ChatFigures | null = null
  if (!only || only === 'chat') chat = await benchChat(url, PORT, SCALE, CONNECTIONS, DURATION)
  let knowledge: KnowledgeFigures | null = null
  if (!only || only === 'knowledge') {
    // The indexing service is measured alone: the main service (its API and worker)
    // would share the two cores without taking part.
    await stopService(server)
    knowledge = await benchKnowledge(url, PORT + 1, DURATION)
    server = await startServer(url)
  }
  let contacts: ContactFigures | null = null
  if (!only || only === 'contacts') contacts = await benchContacts(url, PORT, SCALE)
  let crawler: CrawlerFigures | null = null
  if (!only || only === 'crawler') {
    // The crawl's service has politeness off and the loopback site admitted, and logs
    // at info for the scan's summary line; it replaces the one started above.
    await stopService(server)
    crawler = await benchCrawler(url, PORT, () => startServer(url, 'all', { ...CRAWLER_ENV, LOG_LEVEL: 'info' }, true), stopService)
  }
  let webhooks: WebhookFigures | null = null
  if (!only || only === 'webhooks') {
    // Acceptance is the API's alone, as deployments scale it (compose runs the API and
    // the worker apart): an API process with no worker beside it takes the deliveries,
    // then a worker process turns the accepted backlog into completed runs.
    await stopService(server)
    const api = await startServer(url, 'api')
    try {
      webhooks = await benchWebhooks(url, PORT, SCALE, CONNECTIONS, DURATION, () => spawnService(url, 'worker'), stopService)
    } finally {
      await stopService(api)
    }
  }
  const [version] = await postgres(url, { max: 1 })`select current_setting('server_version') as v`
  const lines = [
    `${CONNECTIONS} connections, ${DURATION} s each, ${PROJECTS} projects, PostgreSQL ${version!.v}, Node ${process.version}`,
    '',
  ]
  if (rows.length > 0) {
    lines.push(
      '| request | HTTP req/s | HTTP p50 ms | HTTP p99 ms | floor req/s | floor p50 ms | floor p99 ms | HTTP / floor | statements per request | errors |',
      '|---|---|---|---|---|---|---|---|---|---|',
      ...rows,
      '',
    )
  }
  if (runs) {
    lines.push(
      `Runs of a trivial automation (set + output) started with POST at ${CONNECTIONS} connections; worker concurrency ${WORKER_CONCURRENCY}:`,
      '',
      '| runs started | runs completed | completed runs/s | start to finish p50 ms | p99 ms | floor: empty graphile jobs/s | errors |',
      '|---|---|---|---|---|---|---|',
      `| ${runs.started} | ${runs.completed} | ${runs.completedPerSecond.toFixed(0)} | ${runs.p50} | ${runs.p99} | ${emptyJobs.toFixed(0)} | ${runs.errors} |`,
      '',
    )
  }
  if (tasks.length > 0) {
    lines.push(
      `Task creates by natural key (an upsert of items that exist; 2,000 items cycled) at ${CONNECTIONS} connections; the floor sends app.handle with task_create and the same arguments through the request pool:`,
      '',
      '| request | HTTP req/s | HTTP p50 ms | HTTP p99 ms | floor req/s | floor p50 ms | floor p99 ms | HTTP / floor | statements per request | errors |',
      '|---|---|---|---|---|---|---|---|---|---|',
      ...tasks.map(({ mix, http, floor, statements }) =>
        `| POST /api/v1/projects/{id}/tasks, repeats ${mix} | ${http.rps.toFixed(0)} | ${http.p50} | ${http.p99} | ${floor.rps.toFixed(0)} | ${floor.p50} | ${floor.p99} | ${(http.rps / floor.rps * 100).toFixed(0)}% | ${statements.toFixed(2)} | ${http.errors + floor.errors} |`),
      '',
    )
  }
  if (chat) {
    const { firstPart, http, floor, statements, answers } = chat
    lines.push(
      `Chat sends with the local model (local-echo), against the service with its worker (concurrency ${WORKER_CONCURRENCY}); every send on a thread of its own (${chat.threads} threads of ${chat.users} members, ${chat.threadsPerUser} each, one member's after the other's). First part: ${firstPart.sends} sends one at a time, from the 202 to the first text readable through GET .../messages/{replyMessageId}, polled every 2 ms:`,
      '',
      '| sends | send p50 ms | first part p50 ms | p99 ms | max ms | polls per send |',
      '|---|---|---|---|---|---|',
      `| ${firstPart.sends} | ${firstPart.sendP50} | ${firstPart.p50} | ${firstPart.p99} | ${firstPart.max} | ${firstPart.polls.toFixed(1)} |`,
      '',
      `Sends at ${CONNECTIONS} connections, each with its own Idempotency-Key; the floor sends app.handle with thread_send and the same arguments through the request pool:`,
      '',
      '| request | HTTP req/s | HTTP p50 ms | HTTP p99 ms | floor req/s | floor p50 ms | floor p99 ms | HTTP / floor | statements per request | errors | answers complete | completed/s |',
      '|---|---|---|---|---|---|---|---|---|---|---|---|',
      `| POST /api/v1/threads/{id}/messages | ${http.rps.toFixed(0)} | ${http.p50} | ${http.p99} | ${floor.rps.toFixed(0)} | ${floor.p50} | ${floor.p99} | ${(http.rps / floor.rps * 100).toFixed(0)}% | ${statements.toFixed(2)} | ${http.errors + floor.errors} | ${answers.complete} of ${answers.sent} | ${answers.completePerSecond.toFixed(0)} |`,
      '',
    )
  }
  if (knowledge) {
    const { indexing, search } = knowledge
    lines.push(
      `The indexing service as its own process (runner concurrency ${indexing.concurrency}): ${indexing.documents} documents (plain text, markdown and three-page PDFs in turn) uploaded in the background, from the first upload to the last settled:`,
      '',
      '| documents | completed | failed | seconds | documents per minute |',
      '|---|---|---|---|---|',
      `| ${indexing.documents} | ${indexing.completed} | ${indexing.failed} | ${indexing.seconds} | ${indexing.perMinute} |`,
      '',
      `Search over ${search.chunks.toLocaleString('en')} chunks in ${search.files} files at 8 connections, every query naming every file, top_k 5; the floor sends the route's statement with the same arguments from 8 callers through a pool of the service's size. After a warm-up of each, the sides take turns, ${search.rounds.length} rounds each, which goes first swapping every round:`,
      '',
      '| round | HTTP req/s | HTTP p50 ms | HTTP p99 ms | floor req/s | floor p50 ms | floor p99 ms | HTTP / floor |',
      '|---|---|---|---|---|---|---|---|',
      ...search.rounds.map((r, i) =>
        `| ${i + 1} | ${r.http.rps.toFixed(0)} | ${r.http.p50} | ${r.http.p99} | ${r.floor.rps.toFixed(0)} | ${r.floor.p50} | ${r.floor.p99} | ${(r.http.rps / r.floor.rps * 100).toFixed(0)}% |`),
      '',
      'Medians of the rounds:',
      '',
      '| request | HTTP req/s | HTTP p50 ms | HTTP p99 ms | floor req/s | floor p50 ms | floor p99 ms | HTTP / floor | errors |',
      '|---|---|---|---|---|---|---|---|---|',
      `| POST /api/v1/search | ${search.http.rps.toFixed(0)} | ${search.http.p50} | ${search.http.p99} | ${search.floor.rps.toFixed(0)} | ${search.floor.p50} | ${search.floor.p99} | ${(search.http.rps / search.floor.rps * 100).toFixed(0)}% | ${search.http.errors + search.floor.errors} |`,
      '',
    )
  }
  if (contacts) {
    const rate = (kind: string, side: string) => {
      const of = contacts!.imports.filter((i) => i.kind === kind && i.side === side).map((i) => i.rowsPerSecond).sort((a, b) => a - b)
      return of[Math.floor(of.length / 2)]!
    }
    lines.push(
      `Contact bulk imports of ${contacts.rows.toLocaleString('en')} rows as an Editor's key, each timed alone: POST /api/v1/contacts/bulk over HTTP, and the floor, app.handle with contacts_bulk and the same rows through the request pool. create: every row new; repeat: the same rows again (updated, unchanged, nothing written); change: the same rows with a new company and attributes (every row written, with its event):`,
      '',
      '| round | side | import | body KiB | ms | contacts/s | created | updated | failed |',
      '|---|---|---|---|---|---|---|---|---|',
      ...contacts.imports.map((i) =>
        `| ${i.round} | ${i.side} | ${i.kind} | ${Math.round(i.bytes / 1024)} | ${i.ms} | ${i.rowsPerSecond} | ${i.created} | ${i.updated} | ${i.failed} |`),
      '',
      '| import | HTTP contacts/s (median) | floor contacts/s (median) | HTTP / floor |',
      '|---|---|---|---|',
      ...(['create', 'repeat', 'change'] as const).map((kind) =>
        `| ${kind} | ${rate(kind, 'HTTP')} | ${rate(kind, 'floor')} | ${(rate(kind, 'HTTP') / rate(kind, 'floor') * 100).toFixed(0)}% |`),
      '',
    )
  }
  if (crawler) {
    const split = (s: CrawlerFigures['api']['split']) => {
      if (!s) return '| not logged | | | |'
      const total = s.fetchMs + s.extractMs + s.storeMs
      const share = (ms: number) => `${(ms / 1000).toFixed(1)} (${Math.round(ms / total * 100)}%)`
      return `| ${share(s.fetchMs)} | ${share(s.extractMs)} | ${share(s.storeMs)} |`
    }
    const row = (how: string, r: CrawlerFigures['api']) =>
      `| ${how} | ${r.visited} | ${r.fetched} | ${r.skipped} | ${r.seconds.toFixed(1)} | ${r.pagesPerSecond.toFixed(0)} ${split(r.split)} ${r.indexed} | ${r.indexedSeconds.toFixed(1)} |`
    lines.push(
      `A loopback site of ${crawler.pages.toLocaleString('en')} pages (about ${crawler.wordsPerPage} words each, five links to other pages, a sitemap of all, robots.txt allowing all) scanned with CRAWLER_DELAY_MS=0 and host concurrency ${crawler.concurrency}. Through the API: from POST /api/v1/websites to the scan's end (GET status idle with lastScanFinishedAt), the worker's crawl_website job, its split from the job's log line; alone: the job's scan (scanWebsite) in the bench process through an owner pool. Fetch, extraction and store are seconds summed over pages (overlapping, with their share of the three); the worker indexes the stored pages meanwhile in both:`,
      '',
      '| crawl | pages visited | fetched | skipped | seconds | pages/s | fetch s | extraction s | store s | pages indexed | seconds to all indexed |',
      '|---|---|---|---|---|---|---|---|---|---|---|',
      row('through the API and the worker', crawler.api),
      row('the scan alone', crawler.direct),
      '',
    )
  }
  if (webhooks) {
    const { http, floor, statements, runs: hooked } = webhooks
    lines.push(
      `Webhook deliveries to one trigger from one address at ${CONNECTIONS} connections, each with its own Idempotency-Key, taken by an API process with no worker beside it; the floor sends app.webhook_deliver with the same arguments through the request pool:`,
      '',
      '| request | HTTP accepted/s | HTTP p50 ms | HTTP p99 ms | floor accepted/s | floor p50 ms | floor p99 ms | HTTP / floor | statements per delivery | errors |',
      '|---|---|---|---|---|---|---|---|---|---|',
      `| POST /api/automations/webhook/{token} | ${http.rps.toFixed(0)} | ${http.p50} | ${http.p99} | ${floor.rps.toFixed(0)} | ${floor.p50} | ${floor.p99} | ${(http.rps / floor.rps * 100).toFixed(0)}% | ${statements.toFixed(2)} | ${http.errors + floor.errors} |`,
      '',
      `Then a worker process (concurrency ${WORKER_CONCURRENCY}) on the accepted backlog:`,
      '',
      '| deliveries accepted | runs completed | completed runs/s |',
      '|---|---|---|',
      `| ${hooked.accepted} | ${hooked.completed} | ${hooked.completedPerSecond.toFixed(0)} |`,
      '',
    )
  }
  process.stdout.write(lines.join('\n'))
} finally {
  await stopService(server)
  await database.stop()
}
process.exit(0)
