// One scan of a website (db/functions/0160_websites.sql), the body of the crawl_website
// job that the worker and the crawler service's own runner both run: robots.txt,
// sitemaps and links on its origin, each page visited stored as it comes (indexed when
// its text changed), then the scan's counts and the next scan.
//
// - A scan runs at most crawler.scanMaxSeconds: graphile-worker frees a job's lock
//   after four hours, and a scan that long would start twice. One cut short is
//   finished as such, the next starts a minute later, and it visits first the pages
//   visited longest ago (startUrls), so successive scans get through a large site.
// - Visits are stored in batches (up to 25, or what half a second brought).
// - A website deleted during its scan stops it at the next batch.
// - One scan at a time per host, whoever's website it is: a scan that finds its host
//   leased by another is put off a minute.
// - A scan that fails as a whole (the database gone mid-scan) is recorded failed and
//   the next scan is scheduled as usual; the job itself succeeds, so it is not retried
//   on top of that schedule.
// - A scan stopped by a shutdown records nothing: the job is released and runs again.
import type { Query } from '../indexing/pipeline.ts'
import { limit } from '../limits.ts'
import { crawlSite, type CrawlSummary, type KnownPage, type PageResult } from './crawl.ts'
import { scanOptions, type CrawlerSettings } from './settings.ts'

interface Scan {
  /** Another website's scan holds the host: this one was put off a minute. */
  busy?: true
  id: string
  origin: string
  known: Record<string, KnownPage & { contentHash: string | null }>
  /** Known pages, least recently visited first, for a scan to visit before the rest. */
  stale: string[]
}

export type ScanOutcome = CrawlSummary & { complete: boolean }

/** Visits stored together, and how long the first of a batch waits for the rest at most. */
const STORE_BATCH = 25
const STORE_BATCH_MS = 500

// PostgreSQL text holds no NUL: a page whose text has one is stored without it.
const withoutNul = (_key: string, value: unknown) => (typeof value === 'string' ? value.replaceAll('\u0000', '') : value)

/** The scan's outcome, or null when the website is gone. */
export async function scanWebsite(query: Query, websiteId: string, settings: CrawlerSettings,
  signal?: AbortSignal): Promise<ScanOutcome | null> {
  const [started] = await query<{ scan: Scan | null }>('select app.website_scan_start($1) as scan', [websiteId])
  const scan = started?.scan
  if (!scan || scan.busy) return null
  const gone = new AbortController()
  const deadline = AbortSignal.timeout(limit('crawler.scanMaxSeconds') * 1000)
  const stop = AbortSignal.any([gone.signal, deadline, ...(signal ? [signal] : [])])
  // Visits are stored a batch at a time: one statement and one commit per batch.
  let pending: PageResult[] = []
  let oldest = 0
  let flushed: Promise<void> = Promise.resolve()
  const flush = () => {
    const batch = pending
    pending = []
    flushed = flushed.then(async () => {
      if (batch.length === 0 || gone.signal.aborted) return
      const [row] = await query<{ stored: boolean }>('select app.website_pages_store($1, $2::text::jsonb) as stored',
        [websiteId, JSON.stringify(batch, withoutNul)])
      if (!row?.stored) gone.abort()
    })
    return flushed
  }
  let summary: CrawlSummary
  try {
    summary = await crawlSite({ ...scanOptions(settings, scan.origin, stop), startUrls: scan.stale }, {
      known: async (url) => scan.known[url] ?? null,
      page: async (visit) => {
        if (pending.length === 0) oldest = Date.now()
        pending.push(visit)
        if (pending.length >= STORE_BATCH || Date.now() - oldest >= STORE_BATCH_MS) await flush()
      },
    })
    await flush()
  } catch (error) {
    if (signal?.aborted) {
      await releaseHost(query, websiteId)
      throw error
    }
    await query('select app.website_scan_finish($1, null, $2, false)', [websiteId, `the scan stopped: ${(error as Error).message}`])
    return null
  }
  if (signal?.aborted) {
    await releaseHost(query, websiteId)
    throw new Error('the scan was interrupted by a shutdown; it runs again')
  }
  if (gone.signal.aborted) return null
  const { visited, fetched, unchanged, skipped } = summary
  // Complete: every page found was visited, neither the time bound nor the page bound cut it short.
  const complete = !deadline.aborted && visited < limit('crawler.maxPagesPerScan')
  await query('select app.website_scan_finish($1, $2::text::jsonb, null, $3)',
    [websiteId, JSON.stringify({ visited, fetched, unchanged, skipped, complete }), complete])
  return { ...summary, complete }
}

/** A scan stopped by a shutdown frees its host for others until its job runs again. */
async function releaseHost(query: Query, websiteId: string): Promise<void> {
  await query('delete from app.crawl_leases where website_id = $1', [websiteId]).catch(() => {})
}
