// A site's robots.txt, read the way Google reads it: a missing file (any 4xx but 429)
// permits everything; a server error, a 429, a network failure or a refused fetch
// forbids everything for this scan, because the site may be saying "not now" and
// crawling on would ignore rules we could not read.
import robotsParserModule from 'robots-parser'
import type { PageAnswer } from './fetch-page.ts'

export type Robots = {
  isAllowed(url: string): boolean
  crawlDelaySeconds: number | null
  sitemaps: string[]
}

export type PageFetcher = (url: string) => Promise<PageAnswer>

// robots-parser is CommonJS and its types declare an ES default export; under Node's
// ESM the default import is module.exports, which is the parser function itself.
const robotsParser = robotsParserModule as unknown as typeof robotsParserModule.default

const everythingAllowed: Robots = { isAllowed: () => true, crawlDelaySeconds: null, sitemaps: [] }
const nothingAllowed: Robots = { isAllowed: () => false, crawlDelaySeconds: null, sitemaps: [] }

export async function loadRobots(origin: string, fetcher: PageFetcher, userAgent: string): Promise<Robots> {
  const robotsUrl = new URL('/robots.txt', origin).href
  const answer = await fetcher(robotsUrl)
  if (answer.kind !== 'fetched') return nothingAllowed
  if (answer.status >= 500 || answer.status === 429) return nothingAllowed
  if (answer.status >= 400) return everythingAllowed
  // A redirect chain that ends on another status than 2xx (a 3xx without Location) has no rules to read.
  if (answer.status < 200 || answer.status >= 300) return everythingAllowed
  // The rules are read for the site's own robots URL even after a redirect: they are this site's rules.
  const robot = robotsParser(robotsUrl, answer.body.toString('utf8'))
  const delay = robot.getCrawlDelay(userAgent)
  return {
    // robots-parser answers undefined for a URL of another origin, which these rules do not cover.
    isAllowed: (url) => robot.isAllowed(url, userAgent) === true,
    crawlDelaySeconds: typeof delay === 'number' && Number.isFinite(delay) && delay >= 0 ? delay : null,
    sitemaps: robot.getSitemaps(),
  }
}
