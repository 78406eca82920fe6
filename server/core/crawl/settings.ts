// The crawler's settings from the environment (server/core/config.ts), shared by the
// worker's crawl_website task and the crawler service's live fetches.
import type net from 'node:net'
import { limit } from '../limits.ts'
import { parseAllowlist } from '../web/guard.ts'
import type { CrawlOptions } from './crawl.ts'

export interface CrawlerSettings {
  hostConcurrency: number
  delayMs: number
  /** Private or loopback networks an operator admits (CRAWLER_ALLOWED_NETWORKS). */
  allow?: net.BlockList
  wordCountThreshold: number
  userAgent: string
}

/** Public sites only, two requests in flight and a second between starts (the CRAWLER_* variables' defaults). */
export const CRAWLER_DEFAULTS: CrawlerSettings = { hostConcurrency: 2, delayMs: 1000, wordCountThreshold: 20, userAgent: 'TaleCrawler/1.0' }

export const FETCH_TIMEOUT_MS = 20_000

export function crawlerSettings(config: { CRAWLER_HOST_CONCURRENCY: number; CRAWLER_DELAY_MS: number;
  CRAWLER_ALLOWED_NETWORKS?: string; CRAWLER_WORD_COUNT_THRESHOLD: number; CRAWLER_USER_AGENT: string }): CrawlerSettings {
  return {
    hostConcurrency: config.CRAWLER_HOST_CONCURRENCY,
    delayMs: config.CRAWLER_DELAY_MS,
    ...(config.CRAWLER_ALLOWED_NETWORKS ? { allow: parseAllowlist(config.CRAWLER_ALLOWED_NETWORKS) } : {}),
    wordCountThreshold: config.CRAWLER_WORD_COUNT_THRESHOLD,
    userAgent: config.CRAWLER_USER_AGENT,
  }
}

/** A scan's options: the settings, and the limits of db/limits.json. */
export function scanOptions(settings: CrawlerSettings, origin: string, signal?: AbortSignal): CrawlOptions {
  return {
    origin, maxPages: limit('crawler.maxPagesPerScan'), concurrency: settings.hostConcurrency, delayMs: settings.delayMs,
    maxBytes: limit('crawler.pageMaxBytes'), maxRedirects: limit('crawler.maxRedirects'), timeoutMs: FETCH_TIMEOUT_MS,
    userAgent: settings.userAgent, wordCountThreshold: settings.wordCountThreshold,
    ...(settings.allow ? { allow: settings.allow } : {}), ...(signal ? { signal } : {}),
  }
}
