// /metrics/crawler: the crawler service's own Prometheus registry. Counters count what
// this process did (scans of its runner, URL reads); the website gauge is read from
// SQL at every scrape, so it covers every process.
import { Counter, Gauge, Registry } from 'prom-client'
import type { Sql } from '../../core/db/connection.ts'
import type { CrawlSummary } from '../../core/crawl/crawl.ts'

export interface CrawlerMetrics {
  registry: Registry
  fetches: Counter<'source'>
  scanned: (summary: CrawlSummary) => void
}

export function createCrawlerMetrics(sql: Sql): CrawlerMetrics {
  const registry = new Registry()
  const fetches = new Counter({
    name: 'crawler_url_fetches_total', help: 'URLs answered by POST /api/v1/urls/fetch, by source (cache or live).',
    labelNames: ['source'] as const, registers: [registry],
  })
  fetches.inc({ source: 'cache' }, 0)
  fetches.inc({ source: 'live' }, 0)
  const scans = new Counter({ name: 'crawler_scans_total', help: 'Website scans this process\'s runner finished.', registers: [registry] })
  const pages = new Counter({
    name: 'crawler_pages_total', help: 'Pages visited by this process\'s scans, by outcome (fetched, unchanged, skipped).',
    labelNames: ['outcome'] as const, registers: [registry],
  })
  for (const outcome of ['fetched', 'unchanged', 'skipped']) pages.inc({ outcome }, 0)
  const seconds = new Counter({
    name: 'crawler_scan_seconds_total', help: 'Time this process\'s scans spent, by part (fetch, extract, store), summed over requests.',
    labelNames: ['part'] as const, registers: [registry],
  })
  for (const part of ['fetch', 'extract', 'store']) seconds.inc({ part }, 0)
  new Gauge({
    name: 'crawler_websites', help: 'The crawler service\'s own websites, by status, across every process.',
    labelNames: ['status'] as const, registers: [registry],
    async collect() {
      try {
        const rows = await sql<{ status: string; count: number }[]>`
          select s.status, count(w.id)::int as count
            from unnest(array['queued', 'scanning', 'idle', 'failed']) as s (status)
            left join app.websites w on w.status = s.status and w.organization_id is null
           group by s.status`
        for (const row of rows) this.set({ status: row.status }, row.count)
      } catch {
        // A database that does not answer leaves the gauge out of this scrape.
        this.reset()
      }
    },
  })
  return {
    registry, fetches,
    scanned: (summary) => {
      scans.inc()
      pages.inc({ outcome: 'fetched' }, summary.fetched)
      pages.inc({ outcome: 'unchanged' }, summary.unchanged)
      pages.inc({ outcome: 'skipped' }, summary.skipped)
      seconds.inc({ part: 'fetch' }, summary.fetchMs / 1000)
      seconds.inc({ part: 'extract' }, summary.extractMs / 1000)
      seconds.inc({ part: 'store' }, summary.storeMs / 1000)
    },
  }
}
