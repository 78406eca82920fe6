// One scan of a website (db/functions/0160_websites.sql), the body of the crawl_website
// job that the worker and the crawler service's own runner both run: robots.txt,
// sitemaps and links on its origin, each page visited stored as it comes (indexed when
// its text changed), then the scan's counts and the next scan an interval later. A
// website deleted meanwhile ends the scan quietly. A scan that fails as a whole (the
// database gone) throws for the job to be retried; its pages stored so far stay.
import type { Query } from '../indexing/pipeline.ts'
import { crawlSite, type CrawlSummary, type KnownPage } from './crawl.ts'
import { scanOptions, type CrawlerSettings } from './settings.ts'

interface Scan {
  id: string
  origin: string
  known: Record<string, KnownPage & { contentHash: string | null }>
}

/** The scan's summary, or null when the website is gone. */
export async function scanWebsite(query: Query, websiteId: string, settings: CrawlerSettings,
  signal?: AbortSignal): Promise<CrawlSummary | null> {
  const [started] = await query<{ scan: Scan | null }>('select app.website_scan_start($1) as scan', [websiteId])
  const scan = started?.scan
  if (!scan) return null
  let summary: CrawlSummary
  try {
    summary = await crawlSite(scanOptions(settings, scan.origin, signal), {
      known: async (url) => scan.known[url] ?? null,
      page: async (visit) => {
        await query('select app.website_page_store($1, $2::text::jsonb)', [websiteId, JSON.stringify(visit)])
      },
    })
  } catch (error) {
    if (signal?.aborted) throw error
    await query('select app.website_scan_finish($1, null, $2)', [websiteId, `the scan stopped: ${(error as Error).message}`])
    throw error
  }
  const { visited, fetched, unchanged, skipped } = summary
  await query('select app.website_scan_finish($1, $2::text::jsonb, null)', [websiteId, JSON.stringify({ visited, fetched, unchanged, skipped })])
  return summary
}
