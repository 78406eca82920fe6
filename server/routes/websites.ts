// Websites (/api/v1/websites): sites of the organization the crawler scans at an
// interval, their pages (the offset family) and a search over the indexed ones
// (docs/websites.md). Rules in db/functions/0160_websites.sql.
import * as v from 'valibot'
import type { Route } from './route.ts'
import { integerParam, uuidParam } from '../transport/validation.ts'
import { component } from '../openapi/components.ts'
import { limit } from '../core/limits.ts'
import type { QueryEmbedder } from '../core/indexing/query-embedder.ts'

const QUERY_MAX_UNITS = limit('knowledge.searchQueryMaxUnits')
const MAX_TOP_K = limit('knowledge.searchMaxTopK')
/** A year: a site scanned less often is not being kept. */
const MAX_SCAN_INTERVAL = 31_536_000

const timestamp = v.pipe(v.number(), v.integer(), v.description('Epoch milliseconds'))
const scanInterval = v.pipe(v.number(), v.integer('must be a whole number of seconds'),
  v.minValue(60, 'must be at least 60 seconds'), v.maxValue(MAX_SCAN_INTERVAL, `must be at most ${MAX_SCAN_INTERVAL} seconds (a year)`),
  v.description('Seconds from the end of one scan to the start of the next; at least 60'))

const website = component('Website', v.strictObject({
  id: v.string(),
  domain: v.pipe(v.string(), v.description('The host, with its port when not the default: the natural key')),
  url: v.pipe(v.string(), v.description('Where scans start: https://domain unless http:// was given')),
  scanInterval: v.pipe(v.number(), v.integer()),
  status: v.pipe(v.picklist(['queued', 'scanning', 'idle', 'failed']),
    v.description('queued: a scan is due; scanning; idle: between scans; failed: the last scan could not run (lastError)')),
  lastError: v.nullable(v.string()),
  lastScanStartedAt: v.nullable(timestamp),
  lastScanFinishedAt: v.nullable(timestamp),
  nextScanAt: v.nullable(timestamp),
  lastScan: v.pipe(v.nullable(v.strictObject({
    visited: v.pipe(v.number(), v.integer()), fetched: v.pipe(v.number(), v.integer()),
    unchanged: v.pipe(v.number(), v.integer()), skipped: v.pipe(v.number(), v.integer()),
    complete: v.pipe(v.boolean(), v.description('false when the scan\'s time or page bound cut it short; the next follows a minute later')),
  })), v.description('The counts of the last finished scan: pages visited, fetched, unchanged since the scan before (304), skipped')),
  createdAt: timestamp,
  updatedAt: timestamp,
}))

const SKIP_REASONS = ['disallowed', 'not_html', 'too_large', 'redirect_loop', 'too_many_redirects', 'internal_address',
  'http_error', 'noindex', 'off_site', 'network', 'timeout', 'below_word_count', 'unlinked'] as const

const page = component('WebsitePage', v.strictObject({
  id: v.string(),
  url: v.string(),
  status: v.pipe(v.picklist(['indexed', 'skipped']), v.description('indexed: its readable text is searchable; skipped: see skipReason')),
  skipReason: v.nullable(v.picklist(SKIP_REASONS)),
  detail: v.nullable(v.string()),
  httpStatus: v.nullable(v.pipe(v.number(), v.integer())),
  title: v.nullable(v.string()),
  language: v.nullable(v.string()),
  wordCount: v.nullable(v.pipe(v.number(), v.integer())),
  indexing: v.pipe(v.nullable(v.picklist(['indexing', 'indexed', 'failed'])), v.description('Where its passages are; null when skipped')),
  firstSeenAt: timestamp,
  fetchedAt: timestamp,
  changedAt: v.nullable(timestamp),
}))

const searchResult = component('WebsiteSearchResult', v.strictObject({
  score: v.pipe(v.number(), v.description('The fused rank score, 1 at best (see docs/knowledge.md)')),
  content: v.string(),
  heading: v.nullable(v.string()),
  page: v.strictObject({ id: v.string(), url: v.string(), title: v.nullable(v.string()) }),
}))

const idParams = v.strictObject({ id: uuidParam })
const notBlank = (value: string) => value.trim() !== ''

/** With an embedder, a website search ranks by the query's vector too (as the knowledge search does). */
export const websiteRoutes = (embedder: QueryEmbedder | null): Route[] => [
  {
    kind: 'operation', method: 'GET', path: '/api/v1/websites', tag: 'Websites', operation: 'websites_list', family: 'keyset',
    summary: 'List the organization\'s websites, newest first', errors: [400],
    query: v.strictObject({ limit: v.optional(integerParam(1)), cursor: v.optional(v.string()) }),
    response: v.strictObject({ page: v.array(website), isDone: v.boolean(), continueCursor: v.string() }),
  },
  {
    kind: 'operation', method: 'POST', path: '/api/v1/websites', tag: 'Websites', operation: 'website_create',
    summary: 'Add a website and scan it now (201), or change the interval of the one its domain names (200, created:false)',
    errors: [400, 403],
    body: v.strictObject({
      domain: v.pipe(v.string(), v.minLength(1, 'must not be blank'), v.maxLength(300, 'at most 300 characters'),
        v.description('A host name or IP address (example.com, docs.example.com:8443, http://intranet.example), no path')),
      scanInterval,
    }),
    response: v.strictObject({ website, created: v.boolean() }),
    status: (body) => (body.created ? 201 : 200),
    location: (body) => (body.created ? `/api/v1/websites/${body.website.id}` : undefined),
  },
  {
    kind: 'operation', method: 'GET', path: '/api/v1/websites/:id', tag: 'Websites', operation: 'website_get',
    summary: 'Read a website and its scan state', errors: [404], params: idParams, response: v.strictObject({ website }),
  },
  {
    kind: 'operation', method: 'PATCH', path: '/api/v1/websites/:id', tag: 'Websites', operation: 'website_update',
    summary: 'Change a website\'s scan interval', errors: [400, 403, 404], params: idParams,
    body: v.strictObject({ scanInterval }), response: v.strictObject({ website }),
  },
  {
    kind: 'operation', method: 'DELETE', path: '/api/v1/websites/:id', tag: 'Websites', operation: 'website_delete',
    summary: 'Delete a website, its pages and their passages', status: 204, errors: [403, 404], params: idParams,
  },
  {
    kind: 'operation', method: 'POST', path: '/api/v1/websites/:id/sync', tag: 'Websites', operation: 'website_sync',
    summary: 'Scan the website now (during a scan, another follows it)', status: 202, errors: [403, 404], params: idParams,
    response: v.strictObject({ website }),
  },
  {
    kind: 'operation', method: 'GET', path: '/api/v1/websites/:id/pages', tag: 'Websites', operation: 'website_pages', family: 'offset',
    summary: 'The pages the crawler has seen on the website, by URL: cursor or offset, never both', errors: [400, 404],
    params: idParams,
    query: v.strictObject({
      limit: v.optional(integerParam(1)),
      cursor: v.optional(v.pipe(v.string(), v.description('The previous page\'s continueCursor, unchanged'))),
      offset: v.optional(v.pipe(integerParam(0), v.description('Rows to skip; not with cursor'))),
      status: v.optional(v.pipe(v.picklist(['indexed', 'skipped']), v.description('Only pages of this status'))),
    }),
    response: v.strictObject({
      pages: v.array(page),
      total: v.pipe(v.number(), v.integer(), v.description('Pages matching, all pages counted')),
      offset: v.pipe(v.number(), v.integer(), v.description('The first row\'s position')),
      hasMore: v.boolean(),
      isDone: v.boolean(),
      continueCursor: v.pipe(v.string(), v.description('Signed; the empty string at the last page')),
    }),
  },
  {
    kind: 'operation', method: 'POST', path: '/api/v1/websites/:id/search', tag: 'Websites', operation: 'website_search',
    summary: 'Search the website\'s indexed pages, best passage first', errors: [400, 404], params: idParams,
    body: v.strictObject({
      query: v.pipe(v.string(), v.check(notBlank, 'must not be blank'), v.maxLength(QUERY_MAX_UNITS, `at most ${QUERY_MAX_UNITS} characters`),
        v.description('Words and "quoted phrases" (web search syntax: or, -word)')),
      topK: v.optional(v.pipe(v.number(), v.integer('must be a whole number'), v.minValue(1), v.maxValue(MAX_TOP_K),
        v.description('How many passages at most; 8 when not sent'))),
      similarityThreshold: v.optional(v.pipe(v.number(), v.minValue(0), v.maxValue(1), v.description('The lowest score answered'))),
      language: v.optional(v.pipe(v.string(), v.minLength(1), v.maxLength(63),
        v.description('A PostgreSQL text search configuration (english, german, simple, ...); english when not sent'))),
    }),
    response: v.strictObject({ results: v.array(searchResult) }),
    observe: async (input, caller) =>
      ({ queryEmbedding: embedder ? await embedder(caller.organizationId, (input.body as { query: string }).query) : null }),
  },
]
