// The crawler service (docs/crawler.md) on a loopback port, with its own crawl_website
// runner, against a real loopback website admitted by CRAWLER_ALLOWED_NETWORKS: its
// websites by domain, the URLs a scan saw, URLs read from the cache or live, the
// address guard without the allowlist, the token and the metrics token. Every JSON
// answer is checked against the service's own /openapi.json.
import t from 'tap'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { freshDatabase } from '../lib/db.ts'
import { eventually } from '../lib/wait.ts'
import { loadConfig } from '../../server/core/config.ts'
import { createLogger } from '../../server/core/log.ts'
import { startCrawlerService } from '../../server/services/crawler/service.ts'
import { responseChecker, type ResponseChecker } from '../lib/openapi.ts'

const seen: string[] = []
const words = (topic: string, n: number) => Array.from({ length: n }, (_, i) => `${topic} sentence ${i} says a little more.`).join(' ')
const site = http.createServer((req, res) => {
  const path = (req.url ?? '/').split('?')[0]!
  seen.push(path)
  const html = (title: string, body: string) => {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' })
    res.end(`<!doctype html><html lang="en"><head><title>${title}</title></head><body><article><h1>${title}</h1><p>${body}</p></article></body></html>`)
  }
  switch (path) {
    case '/robots.txt': res.writeHead(200, { 'content-type': 'text/plain' }); return res.end('User-agent: *\nDisallow: /hidden\n')
    case '/': return html('Harbour', `${words('The harbour opens at dawn', 20)} <a href="/boats">Boats</a>`)
    case '/boats': return html('Boats', words('Fishing boats return at noon', 20))
    case '/live': return html('Live page', words('A page read live', 20))
    case '/short': return html('Short', 'Three words only.')
    case '/hidden/page': return html('Hidden', words('never read', 20))
    case '/loop': res.writeHead(302, { location: '/loop2' }); return res.end()
    case '/loop2': res.writeHead(302, { location: '/loop' }); return res.end()
    case '/big': res.writeHead(200, { 'content-type': 'text/html', 'content-length': String(6 * 1024 * 1024) }); return res.end()
    case '/data.csv': res.writeHead(200, { 'content-type': 'text/csv' }); return res.end('a,b\n1,2\n')
    default: res.writeHead(404); return res.end()
  }
})
await new Promise<void>((resolve) => site.listen(0, '127.0.0.1', resolve))
t.teardown(() => new Promise<void>((resolve) => site.close(() => resolve())))
const origin = `http://127.0.0.1:${(site.address() as AddressInfo).port}`
const domain = origin.slice('http://'.length)

const db = await freshDatabase()
t.teardown(() => db.drop())
const METRICS = 'metrics-token-0123456789'
const TOKEN = 'crawler-token-0123456789'

async function start(env: Record<string, string>, runner = true) {
  const config = loadConfig({ DATABASE_URL: db.url, LOG_LEVEL: 'silent', CRAWLER_PORT: '0', CRAWLER_DELAY_MS: '0', ...env })
  const service = await startCrawlerService(config, db.url, { log: createLogger('silent'), port: 0, runner })
  t.teardown(() => service.close())
  let checker: Promise<ResponseChecker> | undefined
  const published = () => checker ??= fetch(`${service.url}/openapi.json`).then((r) => r.json() as Promise<Record<string, unknown>>).then(responseChecker)
  return async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => {
    const res = await fetch(service.url + path, {
      method, headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
      body: body === undefined ? undefined : JSON.stringify(body),
    })
    const text = await res.text()
    const parsed = text && res.headers.get('content-type')?.startsWith('application/json') ? JSON.parse(text) : text
    ;(await published()).check(method, path, res.status, res.headers.get('content-type'), parsed)
    return { status: res.status, body: parsed as any, headers: res.headers }
  }
}

const call = await start({ CRAWLER_ALLOWED_NETWORKS: '127.0.0.1/32', METRICS_BEARER_TOKEN: METRICS })
const encoded = encodeURIComponent(domain)

t.test('a website is added by domain, scanned by the service\'s runner and its URLs listed', async (t) => {
  const added = await call('POST', '/api/v1/websites', { domain: origin, scan_interval: 600 })
  t.equal(added.status, 201)
  t.match(added.body, { created: true, website: { domain, url: origin, scan_interval: 600 } })
  const again = await call('POST', '/api/v1/websites', { domain: origin, scan_interval: 900 })
  t.same([again.status, again.body.created, again.body.website.scan_interval], [200, false, 900], 'the domain is the natural key')
  const done = await eventually(() => call('GET', `/api/v1/websites/${encoded}`), (r) => r.body.website.status === 'idle')
  t.match(done.body.website, { pages: 2, indexed_pages: 2, last_scan: { visited: 2, fetched: 2 } })
  const urls = await call('GET', `/api/v1/websites/${encoded}/urls`)
  t.same(urls.body.urls.map((u: any) => [u.url, u.status]), [[`${origin}/`, 'indexed'], [`${origin}/boats`, 'indexed']])
  // Its pages go to the indexing pipeline like documents.
  const [queued] = await db.owner`select count(*)::int as n from app.index_files where file_id like 'page:%' and organization_id is null`
  t.equal(queued!.n, 2, 'both pages are queued for indexing')
})

t.test('URLs are read from the cache when a scan stored them, else live, with every skip explained', async (t) => {
  await eventually(() => call('GET', `/api/v1/websites/${encoded}`), (r) => r.body.website.status === 'idle')
  seen.length = 0
  const read = await call('POST', '/api/v1/urls/fetch', {
    urls: [`${origin}/boats`, `${origin}/live`, `${origin}/short`, `${origin}/hidden/page`, `${origin}/loop`, `${origin}/big`,
      `${origin}/data.csv`, 'ftp://example.com/x'],
  })
  t.equal(read.status, 200)
  const [boats, live, short, hidden, loop, big, csv, ftp] = read.body.results
  t.match(boats, { status: 'ok', source: 'cache', title: 'Boats', content: /Fishing boats/ })
  t.notOk(seen.includes('/boats'), 'a cached page is not fetched again')
  t.match(live, { status: 'ok', source: 'live', title: 'Live page', content: /read live/, http_status: 200 })
  t.match(short, { status: 'skipped', reason: 'below_word_count' })
  t.match(hidden, { status: 'skipped', reason: 'disallowed' })
  t.notOk(seen.includes('/hidden/page'), 'robots.txt is honoured for live reads')
  t.match(loop, { status: 'skipped', reason: 'redirect_loop' })
  t.match(big, { status: 'skipped', reason: 'too_large' })
  t.match(csv, { status: 'skipped', reason: 'not_html' })
  t.match(ftp, { status: 'skipped', reason: 'bad_scheme' })
  const lower = await call('POST', '/api/v1/urls/fetch', { urls: [`${origin}/short`], word_count_threshold: 1 })
  t.match(lower.body.results[0], { status: 'ok', source: 'live' }, 'word_count_threshold applies per request')
  const higher = await call('POST', '/api/v1/urls/fetch', { urls: [`${origin}/boats`], word_count_threshold: 100_000 })
  t.match(higher.body.results[0], { status: 'skipped', source: 'cache', reason: 'below_word_count', content: null })
})

t.test('without the allowlist a loopback or private address is refused', async (t) => {
  const guarded = await start({}, false)
  seen.length = 0
  const read = await guarded('POST', '/api/v1/urls/fetch', { urls: [`${origin}/live`, 'http://10.0.0.1/', 'http://localhost:1/'] })
  for (const result of read.body.results) t.match(result, { status: 'skipped', reason: 'internal_address' }, result.url)
  t.same(seen, [], 'nothing reached the loopback site')
})

t.test('bad input is refused with every problem at once', async (t) => {
  const bad = await call('POST', '/api/v1/websites', { domain: '', scan_interval: 59, extra: 1 })
  t.equal(bad.status, 400)
  t.equal(bad.body.code, 'INVALID_BODY')
  t.same(bad.body.data.issues.map((i: any) => i.path).sort(), ['domain', 'extra', 'scan_interval'])
  const path = await call('POST', '/api/v1/websites', { domain: 'example.com/a/path', scan_interval: 60 })
  t.match(path, { status: 400, body: { code: 'INVALID_BODY', data: { issues: [{ path: 'domain' }] } } })
  const many = await call('POST', '/api/v1/urls/fetch', { urls: Array.from({ length: 51 }, (_, i) => `${origin}/${i}`) })
  t.match(many, { status: 400, body: { code: 'INVALID_BODY' } })
  t.match(await call('GET', '/api/v1/websites/unknown.example'), { status: 404, body: { code: 'WEBSITE_NOT_FOUND' } })
  t.match(await call('GET', '/api/v1/websites/exa%00mple.com'), { status: 404, body: { code: 'WEBSITE_NOT_FOUND' } }, 'a NUL')
  t.match(await call('DELETE', '/api/v1/websites/example.com%00'), { status: 404, body: { code: 'WEBSITE_NOT_FOUND' } })
  t.match(await call('GET', `/api/v1/websites/${'a'.repeat(400)}`), { status: 404, body: { code: 'WEBSITE_NOT_FOUND' } }, 'too long')
  t.match(await call('PUT', '/api/v1/websites'), { status: 405, body: { code: 'METHOD_NOT_ALLOWED' } })
})

t.test('a token, when set, is asked of every caller but health, metrics and the reference', async (t) => {
  const guarded = await start({ CRAWLER_TOKEN: TOKEN }, false)
  t.match(await guarded('GET', `/api/v1/websites/${encoded}`), { status: 401, body: { code: 'UNAUTHORIZED' } })
  t.match(await guarded('GET', `/api/v1/websites/${encoded}`, undefined, { authorization: `Bearer ${TOKEN}` }), { status: 200 })
  t.equal((await guarded('GET', '/health')).status, 200)
})

t.test('metrics answer only with the metrics token', async (t) => {
  t.match(await call('GET', '/metrics/crawler'), { status: 401 })
  const scraped = await call('GET', '/metrics/crawler', undefined, { authorization: `Bearer ${METRICS}` })
  t.equal(scraped.status, 200)
  t.match(scraped.body, /crawler_url_fetches_total\{source="live"\} [1-9]/)
  t.match(scraped.body, /crawler_scans_total [1-9]/)
  t.match(scraped.body, /crawler_websites\{status="idle"\} 1/)
})

t.test('deleting a website takes its pages and their passages', async (t) => {
  t.equal((await call('DELETE', `/api/v1/websites/${encoded}`)).status, 204)
  t.match(await call('GET', `/api/v1/websites/${encoded}`), { status: 404 })
  t.match(await call('DELETE', `/api/v1/websites/${encoded}`), { status: 404, body: { code: 'WEBSITE_NOT_FOUND' } })
  const [left] = await db.owner`select (select count(*) from app.website_pages)::int as pages,
                                       (select count(*) from app.index_files where file_id like 'page:%')::int as files`
  t.same(left, { pages: 0, files: 0 })
})
