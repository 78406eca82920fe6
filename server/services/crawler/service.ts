// The crawler service: its own HTTP application on CRAWLER_PORT over the owner
// connection, for the deployment's own services. Its websites belong to no
// organization (members never see them; the public API's websites are
// /api/v1/websites of the API), scanned by the same crawl_website job, with its own
// runner when it runs alone. See docs/crawler.md.
//
//   POST   /api/v1/websites                {domain, scan_interval}
//   GET    /api/v1/websites/:domain
//   DELETE /api/v1/websites/:domain
//   GET    /api/v1/websites/:domain/urls
//   POST   /api/v1/urls/fetch              {urls, word_count_threshold?}
//   GET    /health, /metrics/crawler, /openapi.json, /docs
import type { Config } from '../../core/config.ts'
import { ownerPool, type Sql } from '../../core/db/connection.ts'
import type { Logger } from '../../core/log.ts'
import type { Query } from '../../core/indexing/pipeline.ts'
import { HostGate, normalizeUrl } from '../../core/crawl/crawl.ts'
import { scanWebsite } from '../../core/crawl/scan.ts'
import { crawlerSettings, type CrawlerSettings } from '../../core/crawl/settings.ts'
import { ServiceError, jsonBody, writeJson } from '../../core/internal-service/http.ts'
import {
  commonRoutes, startServiceServer, type Handler, type RunningServiceServer, type ServiceRequest, type ServiceRoute,
} from '../../core/internal-service/app.ts'
import { startJobRunner, type JobRunner } from '../../core/internal-service/runner.ts'
import { fetchBody, websiteBody } from './schemas.ts'
import { readPageLive, type LiveRead, type Polite, type RobotsCache } from './read-page.ts'
import { createCrawlerMetrics, type CrawlerMetrics } from './metrics.ts'
import { crawlerDocument } from './openapi.ts'

export const CRAWLER_API_VERSION = '1.0.0'

export interface CrawlerServiceOptions {
  log: Logger
  /** Overrides CRAWLER_PORT (tests pass 0). */
  port?: number
  /** Runs the service's own crawl_website runner (default true). */
  runner?: boolean
}

export type RunningCrawlerService = RunningServiceServer

export async function startCrawlerService(config: Config, databaseUrl: string, options: CrawlerServiceOptions): Promise<RunningCrawlerService> {
  const { log } = options
  const settings = crawlerSettings(config)
  const sql = ownerPool(databaseUrl, Math.min(config.DATABASE_POOL_SIZE, 10), config.DATABASE_POOL_MODE)
  const metrics = createCrawlerMetrics(sql)
  let runner: JobRunner | null = null
  if (options.runner !== false) {
    try {
      runner = await startJobRunner(databaseUrl, {
        concurrency: 2, log, component: 'crawler-runner', poolMode: config.DATABASE_POOL_MODE,
        taskList: {
          crawl_website: async (payload, helpers) => {
            const query: Query = async (text, params) => (await helpers.query(text, params)).rows as never
            const summary = await scanWebsite(query, (payload as { websiteId: string }).websiteId, settings, helpers.abortSignal)
            if (summary) metrics.scanned(summary)
          },
        },
      })
    } catch (error) {
      await sql.end({ timeout: 5 })
      throw error
    }
  }
  const routes = crawlerRoutes({ config, sql, settings, metrics })
  return startServiceServer(routes, {
    name: 'crawler', token: config.CRAWLER_TOKEN, requestTimeoutMs: config.REQUEST_TIMEOUT_MS, log,
    port: options.port ?? config.CRAWLER_PORT, runner, sql,
  })
}

interface Deps {
  config: Config
  sql: Sql
  settings: CrawlerSettings
  metrics: CrawlerMetrics
}

const websiteNotFound = (domain: string) =>
  new ServiceError(404, 'WEBSITE_NOT_FOUND', 'No website of this domain.', { domain })

/** A path's domain, decoded; one that no website can have is simply not found. */
function pathDomain(req: ServiceRequest): string {
  const raw = req.params?.domain ?? ''
  let domain: string
  try {
    domain = decodeURIComponent(raw)
  } catch {
    throw websiteNotFound(raw)
  }
  // No domain holds a control character or runs that long; PostgreSQL text cannot hold NUL.
  if (domain.length > 300 || /[\u0000-\u001f]/.test(domain)) throw websiteNotFound(domain.replace(/[\u0000-\u001f]/g, ''))
  return domain
}

interface CachedPage { url: string; title: string | null; content: string; word_count: number; http_status: number | null; fetched_at: number }

function crawlerRoutes(deps: Deps): ServiceRoute[] {
  const { config, sql, settings, metrics } = deps

  const website = async (domain: string) => {
    const [row] = await sql<{ website: Record<string, unknown> | null }[]>`
      select case when w.id is not null then app.crawler_website_json(w) end as website from app.crawler_website(${domain}) w`
    if (!row?.website) throw websiteNotFound(domain)
    return row.website
  }

  const add: Handler = async (req, res) => {
    const body = await jsonBody(req, websiteBody)
    const [row] = await sql<{ website: Record<string, unknown>; created: boolean }[]>`
      select app.crawler_website_json(u.website) as website, u.created
        from app.website_upsert(null, ${body.domain}, ${body.scan_interval}, null) u`
    writeJson(res, row!.created ? 201 : 200, { website: row!.website, created: row!.created })
  }

  const read: Handler = async (req, res) => {
    writeJson(res, 200, { website: await website(pathDomain(req)) })
  }

  const remove: Handler = async (req, res) => {
    const domain = pathDomain(req)
    const [row] = await sql<{ deleted: boolean }[]>`select app.crawler_website_delete(${domain}) as deleted`
    if (!row?.deleted) throw websiteNotFound(domain)
    res.statusCode = 204
    res.end()
  }

  const urls: Handler = async (req, res) => {
    const domain = pathDomain(req)
    const found = await website(domain)
    const rows = await sql`
      select p.url, p.status, p.skip_reason, p.http_status, p.title, p.word_count, app.ms(p.fetched_at)::float8 as fetched_at,
             app.ms(p.changed_at)::float8 as changed_at
        from app.crawler_website(${domain}) w join app.website_pages p on p.website_id = w.id
       order by p.url`
    writeJson(res, 200, { domain: found.domain, urls: rows })
  }

  const fetchUrls: Handler = async (req, res) => {
    const body = await jsonBody(req, fetchBody)
    const threshold = body.word_count_threshold ?? settings.wordCountThreshold
    const wanted = body.urls.map((address) => ({ address, normalized: normalizeUrl(address)?.href ?? null }))
    const normalized = wanted.flatMap((w) => (w.normalized ? [w.normalized] : []))
    // A page a scan of one of the service's own websites indexed is answered from there.
    const cached = await sql<CachedPage[]>`
      select distinct on (p.url) p.url, p.title, p.content, p.word_count, p.http_status, app.ms(p.fetched_at)::float8 as fetched_at
        from app.website_pages p join app.websites w on w.id = p.website_id
       where w.organization_id is null and p.status = 'indexed' and p.url = any(${normalized}::text[])
       order by p.url, p.fetched_at desc`
    const byUrl = new Map(cached.map((page) => [page.url, page]))
    const robots: RobotsCache = new Map()
    const results: Record<string, unknown>[] = new Array(wanted.length)
    // Live reads are polite as scans are: per host, at most CRAWLER_HOST_CONCURRENCY at
    // once, starting CRAWLER_DELAY_MS apart; hosts are read side by side.
    const live = new Map<string, number[]>()
    wanted.forEach(({ address, normalized: url }, index) => {
      const page = url ? byUrl.get(url) : undefined
      if (page) {
        metrics.fetches.inc({ source: 'cache' })
        results[index] = page.word_count >= threshold
          ? { url: page.url, status: 'ok', source: 'cache', title: page.title, content: page.content, word_count: page.word_count,
              http_status: page.http_status, reason: null, detail: null, fetched_at: page.fetched_at }
          : { url: page.url, status: 'skipped', source: 'cache', title: page.title, content: null, word_count: page.word_count,
              http_status: page.http_status, reason: 'below_word_count', detail: `${page.word_count} words, fewer than ${threshold}`,
              fetched_at: page.fetched_at }
        return
      }
      const host = url ? new URL(url).origin : address
      live.set(host, [...(live.get(host) ?? []), index])
    })
    await Promise.all([...live.values()].map(async (indexes) => {
      const gate = new HostGate(settings.delayMs)
      const polite: Polite = (task) => gate.run(task)
      let next = 0
      const reader = async () => {
        while (next < indexes.length) {
          const index = indexes[next++]!
          metrics.fetches.inc({ source: 'live' })
          results[index] = liveAnswer(await readPageLive(wanted[index]!.address, settings, threshold, robots, polite))
        }
      }
      await Promise.all(Array.from({ length: Math.min(settings.hostConcurrency, indexes.length) }, reader))
    }))
    writeJson(res, 200, { results })
  }

  return [
    { method: 'POST', path: '/api/v1/websites', handle: add },
    { method: 'GET', path: '/api/v1/websites/:domain', handle: read },
    { method: 'DELETE', path: '/api/v1/websites/:domain', handle: remove },
    { method: 'GET', path: '/api/v1/websites/:domain/urls', handle: urls },
    { method: 'POST', path: '/api/v1/urls/fetch', handle: fetchUrls },
    ...commonRoutes({
      sql, metricsName: 'crawler', registry: metrics.registry, metricsToken: config.METRICS_BEARER_TOKEN,
      title: 'Crawler service reference', document: () => crawlerDocument(CRAWLER_API_VERSION),
    }),
  ]
}

function liveAnswer(read: LiveRead): Record<string, unknown> {
  const now = Date.now()
  if (read.status === 'ok') {
    return { url: read.url, status: 'ok', source: 'live', title: read.title, content: read.content, word_count: read.wordCount,
             http_status: read.httpStatus, reason: null, detail: null, fetched_at: now }
  }
  return { url: read.url, status: 'skipped', source: 'live', title: read.title ?? null, content: null, word_count: read.wordCount ?? null,
           http_status: read.httpStatus ?? null, reason: read.reason, detail: read.detail, fetched_at: now }
}
