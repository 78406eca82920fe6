// Website scans (docs/websites.md) of a loopback site of 2,000 pages (bench/crawl-site.ts,
// a process of its own), with politeness off: CRAWLER_DELAY_MS=0 and
// CRAWLER_HOST_CONCURRENCY requests in flight, the site admitted by
// CRAWLER_ALLOWED_NETWORKS=127.0.0.1/32. Two measurements:
//
// - the real path: the website added with POST /api/v1/websites as an Editor's key,
//   scanned by the service's worker (crawl_website) beside the API, timed from the add
//   to GET /api/v1/websites/{id} answering `idle` with lastScanFinishedAt. The job's
//   log line `website <id> scanned` carries the crawl's fetch, extraction and store
//   times. The pages' indexing (index_file jobs, queued as pages are stored) runs in
//   the same worker meanwhile, as it does in production; how long it takes to settle
//   is reported beside.
// - the crawl alone: the job's own scan (scanWebsite) called in this process on the
//   site's second port, through an owner pool as the worker's, while the service's
//   worker indexes the pages it stores. Its summary is the same split, taken without
//   the worker's other jobs on the crawl's event loop.
//
// Fetch, extraction and store times are summed over pages: with requests in flight
// at once they overlap, so their sum exceeds the wall time.
import { spawn, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { createInterface } from 'node:readline'
import pg from 'pg'
import postgres from 'postgres'
import { scanWebsite } from '../server/core/crawl/scan.ts'
import type { CrawlSummary } from '../server/core/crawl/crawl.ts'
import { crawlerSettings } from '../server/core/crawl/settings.ts'
import { memberKey } from './measure.ts'

export const CRAWL_PAGES = Number(process.env.BENCH_CRAWLER_PAGES ?? 2000)
export const CRAWL_CONCURRENCY = Number(process.env.BENCH_CRAWLER_CONCURRENCY ?? 4)

/** The service's environment for the crawl: politeness off, the loopback site admitted. */
export const CRAWLER_ENV = {
  CRAWLER_ALLOWED_NETWORKS: '127.0.0.1/32', CRAWLER_DELAY_MS: '0', CRAWLER_HOST_CONCURRENCY: String(CRAWL_CONCURRENCY),
}

type Split = Pick<CrawlSummary, 'fetchMs' | 'extractMs' | 'storeMs'>

export interface CrawlRun {
  visited: number
  fetched: number
  skipped: number
  /** From the add (or the crawl's start) to the scan's end, in seconds. */
  seconds: number
  pagesPerSecond: number
  /** Summed over pages, in ms; null when the service's log did not carry them. */
  split: Split | null
  /** From the add (or the crawl's start) to the last page's passages indexed, in seconds. */
  indexedSeconds: number
  indexed: number
}

export interface CrawlerFigures { pages: number; wordsPerPage: number; concurrency: number; api: CrawlRun; direct: CrawlRun }

/**
 * The service's log (stderr piped, LOG_LEVEL=info): its warnings and errors passed on to
 * this process's stderr, and the first line that contains a text, when one is awaited.
 */
export function watchLog(child: ChildProcess): (text: string) => Promise<string | null> {
  const seen: string[] = []
  const waiting: { text: string; resolve: (line: string | null) => void }[] = []
  const lines = createInterface({ input: child.stderr! })
  lines.on('line', (line) => {
    if (/"level":"(warn|error)"/.test(line)) process.stderr.write(line + '\n')
    if (line.includes('scanned')) seen.push(line)
    for (const w of [...waiting]) {
      if (line.includes(w.text)) {
        waiting.splice(waiting.indexOf(w), 1)
        w.resolve(line)
      }
    }
  })
  lines.on('close', () => { for (const w of waiting.splice(0)) w.resolve(null) })
  return (text) => {
    const line = seen.find((l) => l.includes(text))
    return line ? Promise.resolve(line) : new Promise((resolve) => waiting.push({ text, resolve }))
  }
}

async function startSite(): Promise<{ child: ChildProcess; ports: number[]; wordsPerPage: number }> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'bench/crawl-site.ts'], {
    env: { ...process.env, SITE_PAGES: String(CRAWL_PAGES) }, stdio: ['ignore', 'pipe', 'inherit'],
  })
  const [line] = await once(createInterface({ input: child.stdout! }), 'line') as [string]
  const { ports, wordsPerPage } = JSON.parse(line) as { ports: number[]; wordsPerPage: number }
  return { child, ports, wordsPerPage }
}

/** Waits until every page of the website is indexed (or failed); returns how many were indexed. */
async function indexingSettled(sql: postgres.Sql, websiteId: string): Promise<number> {
  for (;;) {
    const [state] = await sql<{ pending: number; indexed: number }[]>`
      select count(*) filter (where f.status not in ('completed', 'failed'))::int as pending,
             count(*) filter (where f.status = 'completed')::int as indexed
        from app.website_pages p join app.index_files f on f.website_page_id = p.id
       where p.website_id = ${websiteId}`
    if (state!.pending === 0) return state!.indexed
    await new Promise((r) => setTimeout(r, 100))
  }
}

const round = (ms: number) => Math.round(ms)

/** The split the crawl_website job logged for this website, when its line carries it. */
async function loggedSplit(logged: (text: string) => Promise<string | null>, websiteId: string): Promise<Split | null> {
  const line = await logged(`website ${websiteId} scanned`)
  if (!line) return null
  const entry = JSON.parse(line) as Partial<Split>
  if (typeof entry.fetchMs !== 'number') return null
  return { fetchMs: round(entry.fetchMs), extractMs: round(entry.extractMs!), storeMs: round(entry.storeMs!) }
}

async function throughApi(port: number, sitePort: number, key: string, sql: postgres.Sql,
  logged: (text: string) => Promise<string | null>): Promise<CrawlRun> {
  const base = `http://127.0.0.1:${port}/api/v1/websites`
  const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' }
  const began = performance.now()
  const added = await fetch(base, { method: 'POST', headers, body: JSON.stringify({ domain: `http://127.0.0.1:${sitePort}`, scanInterval: 86_400 }) })
  if (added.status !== 201) throw new Error(`adding the website: ${added.status} ${await added.text()}`)
  const { website } = await added.json() as { website: { id: string } }
  let scan: { status: string; lastScanFinishedAt: number | null; lastError: string | null; lastScan: { visited: number; fetched: number; skipped: number } }
  for (;;) {
    const res = await fetch(`${base}/${website.id}`, { headers })
    scan = (await res.json() as { website: typeof scan }).website
    if (scan.status === 'failed') throw new Error(`the scan failed: ${scan.lastError}`)
    if (scan.status === 'idle' && scan.lastScanFinishedAt !== null) break
    await new Promise((r) => setTimeout(r, 100))
  }
  const seconds = (performance.now() - began) / 1000
  const indexed = await indexingSettled(sql, website.id)
  const indexedSeconds = (performance.now() - began) / 1000
  const { visited, fetched, skipped } = scan.lastScan
  return { visited, fetched, skipped, seconds, pagesPerSecond: visited / seconds, split: await loggedSplit(logged, website.id), indexedSeconds, indexed }
}

async function crawlAlone(url: string, sitePort: number, sql: postgres.Sql): Promise<CrawlRun> {
  const [website] = await sql<{ id: string }[]>`
    insert into app.websites (organization_id, domain, origin, scan_interval, next_scan_at)
    values (app.operator_org_id('bench'), ${`127.0.0.1:${sitePort}`}, ${`http://127.0.0.1:${sitePort}`}, 86400, now() + interval '1 day')
    returning id`
  // The worker's connections: an owner pool with room for every page in flight.
  const pool = new pg.Pool({ connectionString: url, max: CRAWL_CONCURRENCY })
  try {
    const began = performance.now()
    const settings = crawlerSettings({ CRAWLER_HOST_CONCURRENCY: CRAWL_CONCURRENCY, CRAWLER_DELAY_MS: 0,
      CRAWLER_ALLOWED_NETWORKS: '127.0.0.1/32', CRAWLER_WORD_COUNT_THRESHOLD: 20, CRAWLER_USER_AGENT: 'TaleCrawler/1.0' })
    // The job's own scan, storing through the same SQL.
    const summary = await scanWebsite(async (text, params) => (await pool.query(text, params)).rows as never, website!.id, settings)
    if (!summary) throw new Error('the bench website vanished')
    const { visited, fetched, skipped } = summary
    const seconds = (performance.now() - began) / 1000
    // The scan's end scheduled the next one; the bench wants none.
    await pool.query(`select graphile_worker.remove_job('website-scan:' || $1)`, [website!.id])
    const indexed = await indexingSettled(sql, website!.id)
    const indexedSeconds = (performance.now() - began) / 1000
    return { visited, fetched, skipped, seconds, pagesPerSecond: visited / seconds, indexed, indexedSeconds,
             split: { fetchMs: round(summary.fetchMs), extractMs: round(summary.extractMs), storeMs: round(summary.storeMs) } }
  } finally {
    await pool.end()
  }
}

/**
 * `start` starts the service with CRAWLER_ENV and LOG_LEVEL=info, its stderr piped (the
 * API and the worker in one process, as `npm start` runs them); `stop` stops it.
 */
export async function benchCrawler(url: string, port: number, start: () => Promise<ChildProcess>,
  stop: (child: ChildProcess) => Promise<void>): Promise<CrawlerFigures> {
  const key = await memberKey(url, 'crawler-editor@bench.test', 'editor')
  const site = await startSite()
  const sql = postgres(url, { max: 1, onnotice: () => {} })
  const service = await start()
  const logged = watchLog(service)
  try {
    const api = await throughApi(port, site.ports[0]!, key, sql, logged)
    await sql`checkpoint`
    const direct = await crawlAlone(url, site.ports[1]!, sql)
    return { pages: CRAWL_PAGES, wordsPerPage: site.wordsPerPage, concurrency: CRAWL_CONCURRENCY, api, direct }
  } finally {
    await stop(service)
    await sql.end()
    site.child.kill('SIGTERM')
    await once(site.child, 'exit')
  }
}
