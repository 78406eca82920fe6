// Website scans over time (docs/websites.md "Scans"), against loopback sites whose
// behaviour the tests change between scans: a hostile page never fails a scan, a
// site saying "not now" keeps its indexed pages, a page no longer linked is dropped
// after a complete scan, robots.txt may redirect to another host, a sync during a
// scan runs once after it, and a website deleted during its scan stops it.
import t from 'tap'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'
import { world } from '../lib/world.ts'
import { eventually } from '../lib/wait.ts'

const words = (topic: string, n = 30) => Array.from({ length: n }, (_, i) => `${topic} sentence ${i} adds a little more.`).join(' ')
const html = (title: string, body: string) =>
  `<!doctype html><html lang="en"><head><title>${title}</title></head><body><article><h1>${title}</h1><p>${body}</p></article></body></html>`

interface Site { origin: string; requests: string[]; close: () => Promise<void> }
async function serve(handle: (path: string, res: http.ServerResponse, origin: string) => unknown): Promise<Site> {
  const requests: string[] = []
  const server = http.createServer(async (req, res) => {
    const path = (req.url ?? '/').split('?')[0]!
    requests.push(path)
    await handle(path, res, origin)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  const site = { origin, requests, close: () => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()) }) }
  t.teardown(site.close)
  return site
}
const page = (res: http.ServerResponse, title: string, body: string, status = 200) => {
  res.writeHead(status, { 'content-type': 'text/html; charset=utf-8' })
  res.end(html(title, body))
}

const { eddie, gina, service } = await world(t, {
  worker: true,
  env: { CRAWLER_ALLOWED_NETWORKS: '127.0.0.1/32', CRAWLER_DELAY_MS: '0', CRAWLER_HOST_CONCURRENCY: '1' },
})

const add = async (origin: string) => (await eddie.post('/api/v1/websites', { domain: origin, scanInterval: 3600 })).body.website
const finished = (id: string, after = 0) => eventually(() => eddie.get(`/api/v1/websites/${id}`),
  (r) => r.body.website.status === 'idle' && r.body.website.lastScanFinishedAt > after)
const pages = async (id: string) => Object.fromEntries((await eddie.get(`/api/v1/websites/${id}/pages?limit=100`)).body.pages
  .map((p: any) => [new URL(p.url).pathname, p]))
const rescan = async (id: string) => {
  const before = (await eddie.get(`/api/v1/websites/${id}`)).body.website.lastScanFinishedAt
  t.equal((await eddie.post(`/api/v1/websites/${id}/sync`)).status, 202)
  return finished(id, before)
}

t.test('a hostile page (a NUL in its text, a link too long to keep) never fails the scan', async (t) => {
  const site = await serve((path, res) => {
    if (path === '/') return page(res, 'Home', `${words('home')} <a href="/nul">n</a> <a href="/${'x'.repeat(2100)}">long</a> <a href="/after">a</a>`)
    if (path === '/nul') return page(res, 'Nul', words('nul\u0000byte'))
    if (path === '/after') return page(res, 'After', words('after'))
    res.writeHead(404); res.end()
  })
  const website = await add(site.origin)
  const done = await finished(website.id)
  t.equal(done.body.website.lastError, null)
  const seen = await pages(website.id)
  t.same(Object.keys(seen).sort(), ['/', '/after', '/nul'], 'the long link is not followed; the rest are stored')
  t.equal(seen['/nul'].status, 'indexed', 'the NUL is dropped, the page kept')
  t.notOk(site.requests.some((p) => p.length > 2048))
})

t.test('a site saying "not now" keeps its indexed pages; a page no longer linked is dropped after a complete scan', async (t) => {
  const state = { unavailable: false, linkOld: true }
  const site = await serve((path, res) => {
    if (state.unavailable && path !== '/robots.txt' && path !== '/') { res.writeHead(503); return res.end() }
    if (path === '/') return page(res, 'Home', `${words('home')} <a href="/news">News</a> ${state.linkOld ? '<a href="/old">Old</a>' : ''}`)
    if (path === '/news') return page(res, 'News', words('news'))
    if (path === '/old') return page(res, 'Old', words('old'))
    res.writeHead(404); res.end()
  })
  const website = await add(site.origin)
  await finished(website.id)
  t.equal((await pages(website.id))['/news'].status, 'indexed')

  state.unavailable = true
  await rescan(website.id)
  const during = await pages(website.id)
  t.match(during['/news'], { status: 'indexed', detail: 'the server answered 503' }, 'a 503 keeps the page and says why it was not read')

  state.unavailable = false
  state.linkOld = false
  const done = await rescan(website.id)
  t.equal(done.body.website.lastScan.complete, true)
  const after = await pages(website.id)
  t.match(after['/old'], { status: 'skipped', skipReason: 'unlinked', indexing: null })
  t.equal(after['/news'].status, 'indexed')
})

t.test('robots.txt may redirect to another host; its rules apply', async (t) => {
  const rules = await serve((path, res) => {
    res.writeHead(200, { 'content-type': 'text/plain' })
    res.end(path === '/robots.txt' ? 'User-agent: *\nDisallow: /secret\n' : '')
  })
  const site = await serve((path, res) => {
    if (path === '/robots.txt') { res.writeHead(301, { location: `${rules.origin}/robots.txt` }); res.end(); return }
    if (path === '/') return page(res, 'Home', `${words('home')} <a href="/open">o</a> <a href="/secret">s</a>`)
    if (path === '/open') return page(res, 'Open', words('open'))
    return page(res, 'Secret', words('secret'))
  })
  const website = await add(site.origin)
  await finished(website.id)
  const seen = await pages(website.id)
  t.equal(seen['/open'].status, 'indexed', 'the site is crawled by the rules found at the redirect')
  t.match(seen['/secret'], { status: 'skipped', skipReason: 'disallowed' })
  t.notOk(site.requests.includes('/secret'))
})

t.test('a sync during a scan runs once after it; a website deleted during its scan stops it', async (t) => {
  const slow = await serve(async (path, res) => {
    const n = Number(path.slice(1) || 0)
    await sleep(60)
    page(res, `Page ${n}`, `${words(`page ${n}`)} ${n < 40 ? `<a href="/${n + 1}">next</a>` : ''}`)
  })
  const website = await add(slow.origin)
  await eventually(() => eddie.get(`/api/v1/websites/${website.id}`), (r) => r.body.website.status === 'scanning')
  t.equal((await eddie.post(`/api/v1/websites/${website.id}/sync`)).status, 202)
  t.equal((await eddie.post(`/api/v1/websites/${website.id}/sync`)).status, 202, 'twice: still one scan after this one')
  const first = await eventually(() => eddie.get(`/api/v1/websites/${website.id}`), (r) => r.body.website.lastScanFinishedAt !== null)
  t.equal(first.body.website.lastScan.visited, 41)
  // The follow-up scan starts at once; delete the website during it.
  await eventually(() => eddie.get(`/api/v1/websites/${website.id}`),
    (r) => r.body.website.status === 'scanning' && r.body.website.lastScanStartedAt > first.body.website.lastScanFinishedAt)
  await sleep(200)
  t.equal((await eddie.del(`/api/v1/websites/${website.id}`)).status, 204)
  const atDelete = slow.requests.length
  await sleep(1500)
  // Visits are stored a batch at a time (half a second of pages at most): the scan
  // learns at its next batch that the website is gone.
  t.ok(slow.requests.length - atDelete <= 12, `the scan stopped (${slow.requests.length - atDelete} requests after the delete)`)
  t.ok(slow.requests.length < 41 * 2 + 2, 'the second scan did not run to its end')
  const scans = slow.requests.filter((p) => p === '/robots.txt').length
  t.equal(scans, 2, 'two syncs during the first scan made one more scan, not two')
})

t.test('two organizations\' websites on one host are never scanned at once', async (t) => {
  let inFlight = 0
  let most = 0
  // The host answers nothing until the second scan has found it busy, so that scan
  // meets the first one in flight however late a loaded worker takes its job.
  let openHost!: () => void
  const hostOpen = new Promise<void>((resolve) => { openHost = resolve })
  const shared = await serve(async (path, res) => {
    inFlight++
    most = Math.max(most, inFlight)
    await hostOpen
    await sleep(20)
    const n = Number(path.slice(1) || 0)
    inFlight--
    page(res, `Page ${n}`, `${words(`page ${n}`)} ${n < 15 ? `<a href="/${n + 1}">next</a>` : ''}`)
  })
  const acme = (await eddie.post('/api/v1/websites', { domain: shared.origin, scanInterval: 3600 })).body.website
  // Scans share four job queues, and the scans of one queue run one after the other:
  // two that drew the same queue never meet at the host (and the host would wait for
  // ever). The other organization's website is made again until its scan drew
  // another queue than the first's.
  const queueOf = async (id: string) => (await service.db.owner<{ queue: string }[]>`
    select q.queue_name as queue from graphile_worker._private_jobs j
      join graphile_worker._private_job_queues q on q.id = j.job_queue_id
     where j.key = ${`website-scan:${id}`}`)[0]?.queue
  const addGlobex = async () => (await gina.post('/api/v1/websites', { domain: shared.origin, scanInterval: 3600 })).body.website
  let globex = await addGlobex()
  for (let tries = 0; await queueOf(globex.id) === await queueOf(acme.id); tries++) {
    if (tries === 20) throw new Error('every website drew the same scan queue')
    t.equal((await gina.del(`/api/v1/websites/${globex.id}`)).status, 204)
    globex = await addGlobex()
  }
  t.ok(acme.id && globex.id, 'each organization has the site')
  const both = async () => [(await eddie.get(`/api/v1/websites/${acme.id}`)).body.website,
    (await gina.get(`/api/v1/websites/${globex.id}`)).body.website]
  // Put off, or (were the rule broken) both scans at the host at once.
  const meanwhile = await eventually(both, (ws) => most > 1 || ws.some((w) => w.status === 'queued' && w.nextScanAt > Date.now() + 30_000))
  openHost()
  t.equal(most, 1, 'one request in flight to the host at a time (CRAWLER_HOST_CONCURRENCY 1), across both scans')
  t.ok(meanwhile.some((w) => w.status === 'queued' && w.nextScanAt > Date.now() + 30_000), 'the other scan waits its turn, put off about a minute')
  const first = await eventually(both, (ws) => ws.some((w) => w.lastScanFinishedAt !== null))
  t.equal(most, 1, 'and still one at a time once the host answers')
  t.equal(first.find((w) => w.lastScanFinishedAt === null)?.status, 'queued', 'the other scan is still waiting when the first ends')
})

t.test('an address that only looks like one is refused', async (t) => {
  for (const domain of ['999.1.1.1', '1.2.3', '[1:2]', '[127.0.0.1]']) {
    const res = await eddie.post('/api/v1/websites', { domain, scanInterval: 60 })
    t.equal(res.status, 400, domain)
    t.equal(res.body.code, 'INVALID_BODY')
  }
  t.equal((await eddie.post('/api/v1/websites', { domain: '[::1]:8080', scanInterval: 60 })).status, 201, 'an IPv6 literal is a host')
})

t.test('an offset past every page is an empty page, never an overflow', async (t) => {
  const [site] = (await eddie.get('/api/v1/websites')).body.page
  for (const offset of ['99999999999999999999', '9223372036854775807']) {
    const res = await eddie.get(`/api/v1/websites/${site.id}/pages?offset=${offset}`)
    t.equal(res.status, 200)
    t.match(res.body, { pages: [], hasMore: false, isDone: true, continueCursor: '' })
  }
})
