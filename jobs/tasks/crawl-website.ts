import type { Task } from 'graphile-worker'
import type { Query } from '../../server/core/indexing/pipeline.ts'
import { scanWebsite } from '../../server/core/crawl/scan.ts'
import type { CrawlerSettings } from '../../server/core/crawl/settings.ts'

// One scan of a website (server/core/crawl/scan.ts), as the crawler service's own
// runner runs it too.
export const crawlWebsite = (settings: CrawlerSettings): Task => async (payload, helpers) => {
  const { websiteId } = payload as { websiteId: string }
  const query: Query = async (text, params) => (await helpers.query(text, params)).rows as never
  const summary = await scanWebsite(query, websiteId, settings, helpers.abortSignal)
  if (summary) helpers.logger.info(`website ${websiteId} scanned`, { ...summary })
}
