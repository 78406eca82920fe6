// Websites (docs/websites.md): a site of the organization scanned by the worker's
// crawl job against a real loopback website (admitted by CRAWLER_ALLOWED_NETWORKS):
// robots.txt, the sitemap and links; pages listed in the offset family; indexed pages
// searched; a re-scan asks conditionally; access by role and organization.
import t from 'tap'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { world } from '../lib/world.ts'
import { eventually } from '../lib/wait.ts'
import { refused } from '../lib/assert.ts'

const requests: { path: string; ifNoneMatch: string | undefined }[] = []
const words = (topic: string, n: number) => Array.from({ length: n }, (_, i) => `${topic} sentence number ${i} tells more.`).join(' ')
const html = (title: string, body: string) =>
  `<!doctype html><html lang="en"><head><title>${title}</title></head><body><nav>Home About</nav><article><h1>${title}</h1><p>${body}</p></article></body></html>`
const site = http.createServer((req, res) => {
  const path = (req.url ?? '/').split('?')[0]!
  requests.push({ path, ifNoneMatch: req.headers['if-none-match'] as string | undefined })
  const origin = `http://127.0.0.1:${(site.address() as AddressInfo).port}`
  const page = (body: string, etag: string) => {
    if (req.headers['if-none-match'] === etag) { res.writeHead(304, { etag }); return res.end() }
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', etag })
    res.end(body)
  }
  switch (path) {
    case '/robots.txt': res.writeHead(200, { 'content-type': 'text/plain' }); return res.end(`User-agent: *\nDisallow: /private\nSitemap: ${origin}/sitemap.xml\n`)
    case '/sitemap.xml':
      res.writeHead(200, { 'content-type': 'application/xml' })
      return res.end(`<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>${origin}/guide</loc></url></urlset>`)
    case '/': return page(html('Lighthouse keepers', `${words('Lighthouse keepers log every ship', 30)} <a href="/about">About</a>
      <a href="/private/secret">Secret</a> <a href="/data.json">Data</a> <a href="http://elsewhere.example/">Elsewhere</a>`), '"home-1"')
    case '/guide': return page(html('Tidal charts', words('Tidal charts predict spring tides', 30)), '"guide-1"')
    case '/about': return page(html('About', 'Short.'), '"about-1"')
    case '/data.json': res.writeHead(200, { 'content-type': 'application/json' }); return res.end('{"a":1}')
    default: res.writeHead(404, { 'content-type': 'text/html' }); return res.end('<p>gone</p>')
  }
})
await new Promise<void>((resolve) => site.listen(0, '127.0.0.1', resolve))
t.teardown(() => new Promise<void>((resolve) => site.close(() => resolve())))
const port = (site.address() as AddressInfo).port

const { olive, eddie, max, gina, service } = await world(t, {
  worker: true,
  env: { CRAWLER_ALLOWED_NETWORKS: '127.0.0.1/32', CRAWLER_DELAY_MS: '0', CRAWLER_WORD_COUNT_THRESHOLD: '20' },
})

const created = await eddie.post('/api/v1/websites', { domain: `http://127.0.0.1:${port}/`, scanInterval: 3600 })
const website = created.body.website
const scanned = (id: string, scans = 1) => eventually(() => eddie.get(`/api/v1/websites/${id}`),
  (r) => r.body.website.status === 'idle' && r.body.website.lastScanFinishedAt !== null && (scans === 1 || r.body.website.lastScan.unchanged > 0))

t.test('adding a website scans it at once', async (t) => {
  t.equal(created.status, 201)
  t.equal(created.headers.get('location'), `/api/v1/websites/${website.id}`)
  t.match(website, { domain: `127.0.0.1:${port}`, url: `http://127.0.0.1:${port}`, scanInterval: 3600 })
  const again = await eddie.post('/api/v1/websites', { domain: `http://127.0.0.1:${port}`, scanInterval: 7200 })
  t.equal(again.status, 200, 'the domain is the natural key: a repeat create changes the interval')
  t.same([again.body.created, again.body.website.id, again.body.website.scanInterval], [false, website.id, 7200])
  const done = await scanned(website.id)
  t.ok(done.body.website.nextScanAt > done.body.website.lastScanFinishedAt, 'the next scan is scheduled an interval later')
})

t.test('the scan honours robots.txt, follows the sitemap and links on the site, and says why it skipped a page', async (t) => {
  await scanned(website.id)
  const listed = await eddie.get(`/api/v1/websites/${website.id}/pages?limit=100`)
  t.equal(listed.status, 200)
  const byPath = Object.fromEntries(listed.body.pages.map((p: any) => [new URL(p.url).pathname, p]))
  t.match(byPath['/'], { status: 'indexed', title: 'Lighthouse keepers', language: 'en', httpStatus: 200 })
  t.match(byPath['/guide'], { status: 'indexed', title: 'Tidal charts' }, 'found through the sitemap')
  t.match(byPath['/about'], { status: 'skipped', skipReason: 'below_word_count' })
  t.match(byPath['/private/secret'], { status: 'skipped', skipReason: 'disallowed' })
  t.match(byPath['/data.json'], { status: 'skipped', skipReason: 'not_html' })
  t.notOk(requests.some((r) => r.path.startsWith('/private')), 'a disallowed page is never requested')
  t.notOk(listed.body.pages.some((p: any) => p.url.includes('elsewhere.example')), 'another site\'s link is not followed')
})

t.test('pages come in the offset family: offset or a signed cursor, never both', async (t) => {
  await scanned(website.id)
  const first = await max.get(`/api/v1/websites/${website.id}/pages?limit=2`)
  t.match(first.body, { total: 5, offset: 0, hasMore: true, isDone: false })
  t.equal(first.body.pages.length, 2)
  const second = await max.get(`/api/v1/websites/${website.id}/pages?limit=2&cursor=${encodeURIComponent(first.body.continueCursor)}`)
  t.match(second.body, { total: 5, offset: 2, hasMore: true })
  const byOffset = await max.get(`/api/v1/websites/${website.id}/pages?limit=2&offset=2`)
  t.same(byOffset.body.pages, second.body.pages, 'the cursor carries the next offset')
  const last = await max.get(`/api/v1/websites/${website.id}/pages?limit=2&offset=4`)
  t.match(last.body, { offset: 4, hasMore: false, isDone: true, continueCursor: '' })
  refused(t, await max.get(`/api/v1/websites/${website.id}/pages?offset=2&cursor=${encodeURIComponent(first.body.continueCursor)}`),
    400, 'INVALID_QUERY', 'cursor with offset')
  refused(t, await max.get(`/api/v1/websites/${website.id}/pages?cursor=`), 400, 'INVALID_QUERY', 'the empty end cursor')
  refused(t, await max.get(`/api/v1/websites/${website.id}/pages?cursor=forged.cursor`), 400, 'INVALID_CURSOR', 'a forged cursor')
  const skipped = await max.get(`/api/v1/websites/${website.id}/pages?status=skipped`)
  t.equal(skipped.body.total, 3, 'filtered by status')
})

t.test('the indexed pages are searched, best passage first', async (t) => {
  await eventually(() => eddie.get(`/api/v1/websites/${website.id}/pages?status=indexed`),
    (r) => r.body.pages.every((p: any) => p.indexing === 'indexed'))
  const found = await max.post(`/api/v1/websites/${website.id}/search`, { query: 'tidal charts' })
  t.equal(found.status, 200)
  t.match(found.body.results[0], { page: { url: `http://127.0.0.1:${port}/guide`, title: 'Tidal charts' }, content: /spring tides/ })
  const keepers = await max.post(`/api/v1/websites/${website.id}/search`, { query: 'lighthouse' })
  t.equal(new URL(keepers.body.results[0].page.url).pathname, '/')
})

t.test('a sync scans again with conditional requests; unchanged pages are not fetched again', async (t) => {
  await scanned(website.id)
  requests.length = 0
  const synced = await eddie.post(`/api/v1/websites/${website.id}/sync`)
  t.equal(synced.status, 202)
  const done = await scanned(website.id, 2)
  t.ok(done.body.website.lastScan.unchanged >= 2, 'the pages answered 304')
  t.ok(requests.some((r) => r.path === '/guide' && r.ifNoneMatch === '"guide-1"'), 'the stored ETag was sent')
})

t.test('a website at an address the allowlist does not admit is refused by the address guard', async (t) => {
  const before = requests.length
  const guarded = (await eddie.post('/api/v1/websites', { domain: `http://127.0.0.2:${port}`, scanInterval: 600 })).body.website
  await scanned(guarded.id)
  const pages = await eddie.get(`/api/v1/websites/${guarded.id}/pages`)
  t.match(pages.body.pages, [{ url: `http://127.0.0.2:${port}/`, status: 'skipped', skipReason: 'internal_address' }])
  t.equal(requests.length, before, 'nothing was requested')
  t.equal((await eddie.del(`/api/v1/websites/${guarded.id}`)).status, 204)
})

t.test('roles and organizations', async (t) => {
  refused(t, await max.post('/api/v1/websites', { domain: 'example.com', scanInterval: 600 }), 403, 'ROLE_FORBIDDEN', 'a member cannot add one')
  refused(t, await max.post(`/api/v1/websites/${website.id}/sync`), 403, 'ROLE_FORBIDDEN', 'nor sync one')
  refused(t, await gina.get(`/api/v1/websites/${website.id}`), 404, 'WEBSITE_NOT_FOUND', 'another organization\'s website')
  refused(t, await gina.get(`/api/v1/websites/${website.id}/pages`), 404, 'WEBSITE_NOT_FOUND')
  refused(t, await gina.post(`/api/v1/websites/${website.id}/search`, { query: 'tidal' }), 404, 'WEBSITE_NOT_FOUND')
  const listed = await gina.get('/api/v1/websites')
  t.same(listed.body.page, [], 'nothing of acme in globex\'s list')
  const mine = await max.get('/api/v1/websites')
  t.same(mine.body.page.map((w: any) => w.id), [website.id])
})

t.test('a website\'s interval is changed by PATCH, by editors of its organization only', async (t) => {
  const changed = await eddie.patch(`/api/v1/websites/${website.id}`, { scanInterval: 900 })
  t.equal(changed.status, 200)
  t.equal(changed.body.website.scanInterval, 900)
  refused(t, await eddie.patch(`/api/v1/websites/${website.id}`, { scanInterval: 59 }), 400, 'INVALID_BODY', 'under a minute')
  refused(t, await eddie.patch(`/api/v1/websites/${website.id}`, { scanInterval: 600, domain: 'x.example' }), 400, 'INVALID_BODY',
    'the domain is the key, not a field')
  refused(t, await max.patch(`/api/v1/websites/${website.id}`, { scanInterval: 600 }), 403, 'ROLE_FORBIDDEN', 'a member')
  refused(t, await gina.patch(`/api/v1/websites/${website.id}`, { scanInterval: 600 }), 404, 'WEBSITE_NOT_FOUND', 'another organization')
  t.equal((await max.get(`/api/v1/websites/${website.id}`)).body.website.scanInterval, 900, 'refusals changed nothing')
})

t.test('bad input is refused with every problem at once', async (t) => {
  const bad = await eddie.post('/api/v1/websites', { domain: '', scanInterval: 59 })
  refused(t, bad, 400, 'INVALID_BODY')
  t.same(bad.body.data.issues.map((i: any) => i.path).sort(), ['domain', 'scanInterval'])
  refused(t, await eddie.post('/api/v1/websites', { domain: 'example.com/path', scanInterval: 60 }), 400, 'INVALID_BODY', 'a path')
  refused(t, await eddie.post('/api/v1/websites', { domain: 'user@example.com', scanInterval: 60 }), 400, 'INVALID_BODY', 'a user name')
  refused(t, await eddie.get('/api/v1/websites/not-an-id'), 404, 'NOT_FOUND', 'a malformed id names no website')
})

t.test('deleting a website takes its pages and passages with it', async (t) => {
  await scanned(website.id)
  const deleted = await olive.del(`/api/v1/websites/${website.id}`)
  t.equal(deleted.status, 204)
  refused(t, await olive.get(`/api/v1/websites/${website.id}`), 404, 'WEBSITE_NOT_FOUND')
  const [left] = await service.db.owner`select (select count(*) from app.website_pages)::int as pages,
                                                (select count(*) from app.index_chunks where website_page_id is not null)::int as chunks`
  t.same(left, { pages: 0, chunks: 0 })
})
