import type { Task } from 'graphile-worker'
import { crawlSite, type Validators } from '../../server/core/crawl/crawl.ts'
import { scanOptions, type CrawlerSettings } from '../../server/core/crawl/settings.ts'

interface Scan {
  id: string
  origin: string
  known: Record<string, Validators & { contentHash: string | null }>
}

// One scan of a website (db/functions/0160_websites.sql): robots.txt, sitemaps and
// links on its origin, each page visited stored as it comes (indexed when its text
// changed), then the scan's counts and the next scan an interval later. A website
// deleted meanwhile ends the scan quietly. A scan that fails as a whole (the database
// gone) is retried by graphile-worker; its pages stored so far stay.
export const crawlWebsite = (settings: CrawlerSettings): Task => async (payload, helpers) => {
  const { websiteId } = payload as { websiteId: string }
  const { rows: [started] } = await helpers.query<{ scan: Scan | null }>('select app.website_scan_start($1) as scan', [websiteId])
  const scan = started?.scan
  if (!scan) return
  let summary
  try {
    summary = await crawlSite(scanOptions(settings, scan.origin, helpers.abortSignal), {
      known: async (url) => scan.known[url] ?? null,
      page: async (visit) => {
        await helpers.query('select app.website_page_store($1, $2::text::jsonb)', [websiteId, JSON.stringify(visit)])
      },
    })
  } catch (error) {
    if (helpers.abortSignal?.aborted) throw error
    await helpers.query('select app.website_scan_finish($1, null, $2)', [websiteId, `the scan stopped: ${(error as Error).message}`])
    throw error
  }
  const { visited, fetched, unchanged, skipped } = summary
  await helpers.query('select app.website_scan_finish($1, $2::text::jsonb, null)',
    [websiteId, JSON.stringify({ visited, fetched, unchanged, skipped })])
  helpers.logger.info(`website ${websiteId} scanned`, { ...summary })
}
