// One URL read live for POST /api/v1/urls/fetch: robots.txt of its origin first (the
// same rules as a scan), then the page behind the address guard, then its readable
// text. Every outcome is an answer with a reason, never a throw.
import { decodeBody, fetchPage, type PageAnswer } from '../../core/crawl/fetch-page.ts'
import { loadRobots, type Robots } from '../../core/crawl/robots.ts'
import { extractPage } from '../../core/crawl/extract.ts'
import { declaredCharset, isHtml, normalizeUrl } from '../../core/crawl/crawl.ts'
import { FETCH_TIMEOUT_MS, type CrawlerSettings } from '../../core/crawl/settings.ts'
import { limit } from '../../core/limits.ts'

export type LiveRead =
  | { status: 'ok'; url: string; httpStatus: number; title: string | null; content: string; wordCount: number; language: string | null }
  | { status: 'skipped'; url: string; reason: string; detail: string; httpStatus?: number; title?: string | null; wordCount?: number }

/** robots.txt per origin, for one request's URLs, with the refusal that stopped reading it if one did. */
export type RobotsCache = Map<string, Promise<{ robots: Robots; refused: PageAnswer | null }>>

/** Runs one request to a host when politeness lets it (a HostGate of the URL's origin). */
export type Polite = <T>(task: () => Promise<T>) => Promise<T>

export async function readPageLive(address: string, settings: CrawlerSettings, wordCountThreshold: number,
  robotsCache: RobotsCache, polite: Polite, signal?: AbortSignal): Promise<LiveRead> {
  const url = normalizeUrl(address)
  if (!url) return { status: 'skipped', url: address, reason: 'bad_scheme', detail: 'only http and https URLs are read' }
  const options = {
    ...(settings.allow ? { allow: settings.allow } : {}), maxBytes: limit('crawler.pageMaxBytes'),
    maxRedirects: limit('crawler.maxRedirects'), timeoutMs: FETCH_TIMEOUT_MS, userAgent: settings.userAgent,
    ...(signal ? { signal } : {}),
  }
  let robots = robotsCache.get(url.origin)
  if (!robots) {
    robots = (async () => {
      let refused: PageAnswer | null = null
      const rules = await loadRobots(url.origin, async (robotsUrl) => {
        const answer = await polite(() => fetchPage(robotsUrl, { ...options, accept: 'text/plain, */*;q=0.5' }))
        if (answer.kind === 'refused') refused = answer
        return answer
      }, settings.userAgent)
      return { robots: rules, refused }
    })()
    robotsCache.set(url.origin, robots)
  }
  const { robots: rules, refused } = await robots
  // A site the guard refuses is refused as such, not as one whose robots.txt forbids everything.
  if (refused?.kind === 'refused' && refused.reason === 'internal_address') {
    return { status: 'skipped', url: url.href, reason: 'internal_address', detail: refused.detail }
  }
  if (!rules.isAllowed(url.href)) return { status: 'skipped', url: url.href, reason: 'disallowed', detail: 'robots.txt disallows this URL' }
  const answer = await polite(() => fetchPage(url.href, {
    ...options,
    // A redirect is judged by the rules of the site it leads to only when that is this site.
    followRedirect: (target) => (target.origin === url.origin && !rules.isAllowed(target.href) ? 'disallowed' : null),
  }))
  if (answer.kind === 'refused') return { status: 'skipped', url: url.href, reason: answer.reason === 'bad_scheme' ? 'off_site' : answer.reason, detail: answer.detail }
  if (answer.kind === 'not-modified') return { status: 'skipped', url: url.href, reason: 'http_error', detail: 'the server answered 304 to an unconditional request', httpStatus: 304 }
  if (answer.status < 200 || answer.status >= 300) {
    return { status: 'skipped', url: url.href, reason: 'http_error', detail: `the server answered ${answer.status}`, httpStatus: answer.status }
  }
  if (!isHtml(answer)) {
    return { status: 'skipped', url: url.href, reason: 'not_html', detail: `the page is ${answer.contentType || 'of no declared type'}`, httpStatus: answer.status }
  }
  const page = extractPage(decodeBody(answer.body, answer.charset ?? declaredCharset(answer.body)), answer.url, wordCountThreshold)
  if (!page.meetsThreshold) {
    return { status: 'skipped', url: url.href, reason: 'below_word_count', detail: `${page.wordCount} words, fewer than ${wordCountThreshold}`,
             httpStatus: answer.status, title: page.title, wordCount: page.wordCount }
  }
  return { status: 'ok', url: url.href, httpStatus: answer.status, title: page.title, content: page.text, wordCount: page.wordCount, language: page.language }
}
