// The crawl of one site: robots.txt first, then the pages its sitemaps list, then the
// links of the pages fetched, breadth-first, on the site's origin only. Storage is the
// caller's: the store says what it already holds (for conditional requests) and is
// told about each URL visited, once. The host is treated politely: at most
// `concurrency` requests in flight and starts at least the delay apart, robots.txt
// and sitemaps included, the delay raised by the site's Crawl-delay (the hops of one
// redirect chain follow each other without it). Only sitemaps on the site's origin
// are read, so every request of a crawl goes to the one host it is polite to.
import { createHash } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import type net from 'node:net'
import { decodeBody, fetchPage, type FetchedPage, type PageAnswer, type RefusalReason } from './fetch-page.ts'
import { loadRobots, type Robots } from './robots.ts'
import { parseSitemap } from './sitemap.ts'
import { extractPage } from './extract.ts'

export type CrawlOptions = {
  /** The site, as scheme, host and port: `https://example.com`, `http://127.0.0.1:8123`. */
  origin: string
  maxPages: number
  /** Requests in flight to the host at once. */
  concurrency: number
  /** The least time between two request starts to the host. */
  delayMs: number
  maxBytes: number
  maxRedirects: number
  timeoutMs: number
  /** Sent as User-Agent; its first product token (`TaleCrawler/1.0 ...` → TaleCrawler) picks the robots.txt group. */
  userAgent: string
  allow?: net.BlockList
  wordCountThreshold: number
  signal?: AbortSignal
  /**
   * Visited first, before the sitemaps and the root: the pages a scan cut short by its
   * time bound did not reach last time, so successive scans get through a large site.
   */
  startUrls?: string[]
}

/** The longest URL kept: a page linking to longer ones is not crawled into them. */
export const MAX_URL_LENGTH = 2048

export type Validators = { etag: string | null; lastModified: string | null }

/**
 * What the store kept of a page from an earlier crawl. An unchanged page (304) is not
 * read again, so the links it had are how the crawl still reaches the pages behind it.
 */
export type KnownPage = Validators & { links?: string[] }

export type SkipReason = 'disallowed' | 'not_html' | 'too_large' | 'redirect_loop' | 'too_many_redirects' | 'internal_address'
  | 'http_error' | 'noindex' | 'off_site' | 'network' | 'timeout'

export type PageResult =
  | {
    url: string; outcome: 'fetched'; status: number; title: string | null; text: string; wordCount: number; contentHash: string
    etag: string | null; lastModified: string | null; meetsThreshold: boolean; language: string | null; fetchMs: number; extractMs: number
    /** The page's links on the site that the crawl follows (none under nofollow), for the store to keep. */
    links: string[]
  }
  | { url: string; outcome: 'unchanged' }
  | { url: string; outcome: 'skipped'; reason: SkipReason; status?: number; detail: string }

export type CrawlStore = {
  known(url: string): Promise<KnownPage | null>
  page(result: PageResult): Promise<void>
}

/** Times are summed over requests and pages (concurrent work overlaps), for where the time goes. */
export type CrawlSummary = { visited: number; fetched: number; unchanged: number; skipped: number; fetchMs: number; extractMs: number; storeMs: number }

/** A Crawl-delay beyond this is a site asking for a crawl that never ends; it is held to this. */
export const MAX_CRAWL_DELAY_MS = 60_000

// Sitemap indexes can nest and point at each other; a site gets this many sitemap documents.
const MAX_SITEMAPS = 50

const HTML_TYPES = new Set(['text/html', 'application/xhtml+xml'])
const SITEMAP_ACCEPT = 'application/xml, text/xml;q=0.9, */*;q=0.5'

/** The gap between request starts: the caller's delay, raised by the site's Crawl-delay up to the cap. */
export function effectiveDelayMs(delayMs: number, crawlDelaySeconds: number | null): number {
  const asked = crawlDelaySeconds === null ? 0 : Math.min(crawlDelaySeconds * 1000, MAX_CRAWL_DELAY_MS)
  return Math.max(delayMs, asked)
}

/** The one spelling of a URL the crawl keys on: no fragment, no empty query; URL already lower-cases the host and drops a default port. */
export function normalizeUrl(href: string, base?: string | URL): URL | null {
  let url: URL
  try {
    url = new URL(href, base)
  } catch {
    return null
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return null
  url.hash = ''
  // `search` reads '' for a bare '?' too; assigning '' drops the '?' from the href.
  if (!url.search) url.search = ''
  return url
}

/**
 * Request starts to one host, spaced by a gap that may grow. How many run at once is
 * bounded by the visits under way: robots.txt and the sitemaps are read one at a time
 * before any page, and pages are visited at most `concurrency` at once.
 */
export class HostGate {
  private nextStart = 0

  constructor(public gapMs: number, private readonly signal?: AbortSignal) {}

  async run<T>(task: () => Promise<T>): Promise<T> {
    // The start is reserved before waiting, so requests arriving together still take turns.
    const now = Date.now()
    const start = Math.max(now, this.nextStart)
    this.nextStart = start + this.gapMs
    if (start > now) await sleep(start - now, undefined, { signal: this.signal }).catch(() => {})
    return task()
  }
}

export async function crawlSite(options: CrawlOptions, store: CrawlStore): Promise<CrawlSummary> {
  const site = normalizeUrl(options.origin)
  if (!site) throw new Error(`the crawl origin ${options.origin} is not an http or https URL`)
  const origin = site.origin
  const summary: CrawlSummary = { visited: 0, fetched: 0, unchanged: 0, skipped: 0, fetchMs: 0, extractMs: 0, storeMs: 0 }
  const gate = new HostGate(options.delayMs, options.signal)
  const aborted = () => options.signal?.aborted === true

  const inStore = async <T>(work: () => Promise<T>): Promise<T> => {
    const started = performance.now()
    try {
      return await work()
    } finally {
      summary.storeMs += performance.now() - started
    }
  }
  // The time a request spends waiting its turn at the gate is politeness, not fetching, so it is not counted.
  const fetchFromSite = (url: string, extra: { validators?: Validators | null; accept?: string; robots?: Robots; anyOrigin?: boolean } = {}) =>
    gate.run(async () => {
      const started = performance.now()
      const answer = await fetchPage(url, {
        allow: options.allow, maxBytes: options.maxBytes, maxRedirects: options.maxRedirects, timeoutMs: options.timeoutMs,
        userAgent: options.userAgent, signal: options.signal, accept: extra.accept,
        etag: extra.validators?.etag, lastModified: extra.validators?.lastModified,
        followRedirect: (target) => !extra.anyOrigin && target.origin !== origin ? 'off_site'
          : extra.robots && !extra.robots.isAllowed(target.href) ? 'disallowed' : null,
      })
      const fetchMs = performance.now() - started
      summary.fetchMs += fetchMs
      return { answer, fetchMs }
    })

  let unreachable: { reason: RefusalReason; detail: string } | null = null
  const robots = await loadRobots(origin, async (url) => {
    // robots.txt may redirect to another host (example.com to www.example.com), as
    // Google follows it; the address guard still judges every hop.
    const { answer } = await fetchFromSite(url, { accept: 'text/plain, */*;q=0.5', anyOrigin: true })
    if (answer.kind === 'refused' && answer.reason === 'internal_address') unreachable = answer
    return answer
  }, options.userAgent)
  // A site the address guard refuses is reported as such (its root, once), not as a
  // site whose unreadable robots.txt forbids everything.
  if (unreachable) {
    const refusal = unreachable as { reason: RefusalReason; detail: string }
    summary.visited++
    summary.skipped++
    await inStore(() => store.page({ url: new URL('/', origin).href, outcome: 'skipped', reason: skipReason(refusal.reason), detail: refusal.detail }))
    return summary
  }
  gate.gapMs = effectiveDelayMs(options.delayMs, robots.crawlDelaySeconds)

  // Every URL the crawl will visit, in order. Each one queued is visited, so the queue
  // stops at maxPages and is the crawl's bound.
  const queue: string[] = []
  const seen = new Set<string>()
  const enqueue = (href: string, base?: string) => {
    if (queue.length >= options.maxPages) return
    const url = normalizeUrl(href, base)
    if (!url || url.origin !== origin || url.href.length > MAX_URL_LENGTH || seen.has(url.href)) return
    seen.add(url.href)
    queue.push(url.href)
  }

  for (const url of options.startUrls ?? []) enqueue(url)
  await discoverFromSitemaps()
  enqueue('/', origin)

  async function discoverFromSitemaps() {
    const listed = robots.sitemaps.flatMap((href) => normalizeUrl(href)?.origin === origin ? [normalizeUrl(href)!.href] : [])
    const pending = listed.length ? listed : [new URL('/sitemap.xml', origin).href]
    const read = new Set<string>()
    while (pending.length && read.size < MAX_SITEMAPS && queue.length < options.maxPages && !aborted()) {
      const url = pending.shift()!
      if (read.has(url) || !robots.isAllowed(url)) continue
      read.add(url)
      const { answer } = await fetchFromSite(url, { accept: SITEMAP_ACCEPT, robots })
      if (answer.kind !== 'fetched' || answer.status < 200 || answer.status >= 300) continue
      const entries = parseSitemap(answer.body)
      for (const entry of entries.urls) enqueue(entry.loc)
      for (const nested of entries.sitemaps) {
        const nestedUrl = normalizeUrl(nested)
        if (nestedUrl?.origin === origin) pending.push(nestedUrl.href)
      }
    }
  }

  const report = async (result: PageResult) => {
    summary.visited++
    if (result.outcome === 'fetched') summary.fetched++
    else if (result.outcome === 'unchanged') summary.unchanged++
    else summary.skipped++
    await inStore(() => store.page(result))
  }

  const visit = async (url: string) => {
    if (!robots.isAllowed(url)) {
      return report({ url, outcome: 'skipped', reason: 'disallowed', detail: 'robots.txt disallows this URL' })
    }
    const known = await inStore(() => store.known(url))
    const { answer, fetchMs } = await fetchFromSite(url, { validators: known, robots })
    // A fetch cut short by the caller's abort says nothing about the page.
    if (answer.kind === 'refused' && aborted()) return
    if (answer.kind === 'not-modified') for (const link of known?.links ?? []) enqueue(link)
    await report(settle(url, answer, fetchMs))
  }

  const settle = (url: string, answer: PageAnswer, fetchMs: number): PageResult => {
    if (answer.kind === 'refused') return { url, outcome: 'skipped', reason: skipReason(answer.reason), detail: answer.detail }
    if (answer.kind === 'not-modified') return { url, outcome: 'unchanged' }
    if (answer.status < 200 || answer.status >= 300) {
      return { url, outcome: 'skipped', reason: 'http_error', status: answer.status, detail: `the server answered ${answer.status}` }
    }
    if (!isHtml(answer)) {
      return { url, outcome: 'skipped', reason: 'not_html', status: answer.status, detail: `the page is ${answer.contentType || 'of no declared type'}` }
    }
    const started = performance.now()
    const page = extractPage(decodeBody(answer.body, answer.charset ?? declaredCharset(answer.body)), answer.url, options.wordCountThreshold)
    const extractMs = performance.now() - started
    summary.extractMs += extractMs
    // The page a redirect led to is visited now; finding it again later is not a new page.
    const landed = normalizeUrl(answer.url)
    if (landed) seen.add(landed.href)
    const links = page.nofollow ? [] : page.links.filter((link) => normalizeUrl(link)?.origin === origin)
    for (const link of links) enqueue(link)
    if (page.noindex) return { url, outcome: 'skipped', reason: 'noindex', status: answer.status, detail: 'the page asks not to be indexed (meta robots noindex)' }
    return {
      url, outcome: 'fetched', status: answer.status, title: page.title, text: page.text, wordCount: page.wordCount,
      contentHash: createHash('sha256').update(page.text).digest('hex'), etag: answer.etag, lastModified: answer.lastModified,
      meetsThreshold: page.meetsThreshold, language: page.language, fetchMs, extractMs, links,
    }
  }

  // Breadth-first: the queue is visited in the order URLs were found, up to concurrency
  // at once. A store failure stops the crawl once the visits under way have settled.
  const active = new Set<Promise<void>>()
  let failure: { error: unknown } | null = null
  let next = 0
  while (!failure && !aborted()) {
    while (active.size < Math.max(1, options.concurrency) && next < queue.length) {
      const visiting: Promise<void> = visit(queue[next++]!)
        .catch((error: unknown) => { failure ??= { error } })
        .finally(() => active.delete(visiting))
      active.add(visiting)
    }
    if (active.size === 0) break
    await Promise.race(active)
  }
  await Promise.all(active)
  if (failure) throw (failure as { error: unknown }).error
  return summary
}

function skipReason(reason: RefusalReason): SkipReason {
  // A redirect to another scheme (ftp:, mailto:) leaves the site like one to another host.
  return reason === 'bad_scheme' ? 'off_site' : reason
}

export function isHtml(page: FetchedPage): boolean {
  if (HTML_TYPES.has(page.contentType)) return true
  // A server that declares no type: the page is HTML if it starts like HTML.
  return page.contentType === '' && /^\s*(<!doctype html|<html[\s>])/i.test(page.body.subarray(0, 512).toString('latin1'))
}

/** The charset a page names in its own <meta>, for a server that did not send one. */
export function declaredCharset(body: Buffer): string | null {
  const head = body.subarray(0, 2048).toString('latin1')
  return /<meta[^>]+charset\s*=\s*["']?\s*([\w-]+)/i.exec(head)?.[1]?.toLowerCase() ?? null
}
