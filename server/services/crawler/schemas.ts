// The shapes of the crawler service's requests and answers: the same valibot schemas
// check the requests and describe both in /openapi.json (openapi.ts).
import * as v from 'valibot'
import { limit } from '../../core/limits.ts'

export const MAX_SCAN_INTERVAL = 31_536_000
export const MAX_URLS = limit('crawler.fetchUrlsMax')

export const websiteBody = v.strictObject({
  domain: v.pipe(v.string('must be a string'), v.minLength(1, 'must not be empty'), v.maxLength(300, 'must be at most 300 characters'),
    v.description('A host name or IP address (example.com, docs.example.com:8443, http://intranet.example), no path.')),
  scan_interval: v.pipe(v.number('must be a number'), v.integer('must be a whole number of seconds'),
    v.minValue(60, 'must be at least 60 seconds'), v.maxValue(MAX_SCAN_INTERVAL, `must be at most ${MAX_SCAN_INTERVAL} seconds (a year)`),
    v.description('Seconds from the end of one scan to the start of the next; at least 60.')),
})

export const fetchBody = v.strictObject({
  urls: v.pipe(v.array(v.pipe(v.string('must be a string'), v.minLength(1, 'must not be empty'), v.maxLength(2048, 'must be at most 2048 characters')),
    'must be an array of URLs'), v.minLength(1, 'must name at least one URL'), v.maxLength(MAX_URLS, `must name at most ${MAX_URLS} URLs`),
  v.description('Absolute http or https URLs.')),
  word_count_threshold: v.optional(v.pipe(v.number('must be a number'), v.integer('must be a whole number'), v.minValue(0, 'must be at least 0'),
    v.maxValue(100_000, 'must be at most 100000'),
    v.description('A page with fewer words of readable text is answered skipped (below_word_count); CRAWLER_WORD_COUNT_THRESHOLD when omitted.'))),
})

const ms = v.pipe(v.number(), v.integer(), v.description('Epoch milliseconds'))

export const websiteAnswer = v.strictObject({
  domain: v.string(),
  url: v.pipe(v.string(), v.description('Where scans start')),
  scan_interval: v.number(),
  status: v.picklist(['queued', 'scanning', 'idle', 'failed']),
  last_error: v.nullable(v.string()),
  last_scan_started_at: v.nullable(ms),
  last_scan_finished_at: v.nullable(ms),
  next_scan_at: v.nullable(ms),
  last_scan: v.nullable(v.strictObject({ visited: v.number(), fetched: v.number(), unchanged: v.number(), skipped: v.number(), complete: v.boolean() })),
  pages: v.pipe(v.number(), v.integer(), v.description('Pages seen')),
  indexed_pages: v.pipe(v.number(), v.integer(), v.description('Pages whose readable text is indexed')),
  created_at: ms,
  updated_at: ms,
})

export const urlAnswer = v.strictObject({
  url: v.string(),
  status: v.picklist(['indexed', 'skipped']),
  skip_reason: v.nullable(v.string()),
  http_status: v.nullable(v.number()),
  title: v.nullable(v.string()),
  word_count: v.nullable(v.number()),
  fetched_at: ms,
  changed_at: v.nullable(ms),
})

export const fetchResult = v.strictObject({
  url: v.string(),
  status: v.pipe(v.picklist(['ok', 'skipped']), v.description('ok: content holds the readable text; skipped: reason says why not')),
  source: v.pipe(v.picklist(['cache', 'live']), v.description('cache: a page a scan of one of the service\'s websites stored; live: fetched now')),
  title: v.nullable(v.string()),
  content: v.nullable(v.string()),
  word_count: v.nullable(v.number()),
  http_status: v.nullable(v.number()),
  reason: v.nullable(v.string()),
  detail: v.nullable(v.string()),
  fetched_at: ms,
})

