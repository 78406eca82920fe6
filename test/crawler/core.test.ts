// The crawler's core against real HTTP servers on loopback: the address guard and its
// allowlist, page fetching (redirects, size bounds, conditional requests), robots.txt,
// sitemaps, extraction, and the crawl loop's discovery, politeness and bounds.
import t, { type Test } from 'tap'
import http from 'node:http'
import zlib from 'node:zlib'
import { once } from 'node:events'
import { checkHost, guardedLookup, isInternalAddress, parseAllowlist } from '../../server/core/web/guard.ts'
import { decodeBody, fetchPage, parseContentType, type FetchPageOptions } from '../../server/core/crawl/fetch-page.ts'
import { loadRobots } from '../../server/core/crawl/robots.ts'
import { parseSitemap } from '../../server/core/crawl/sitemap.ts'
import { extractPage } from '../../server/core/crawl/extract.ts'
import { crawlSite, effectiveDelayMs, MAX_CRAWL_DELAY_MS, normalizeUrl, type CrawlOptions, type KnownPage, type PageResult } from '../../server/core/crawl/crawl.ts'

type Route = (req: http.IncomingMessage, res: http.ServerResponse) => unknown
type Seen = { path: string; headers: http.IncomingHttpHeaders; at: number }

const allow = parseAllowlist('127.0.0.1')
const USER_AGENT = 'TaleCrawler/1.0 (+https://tale.example/crawler)'

/** A site on loopback: routes by path (with query), 404 for the rest; every request is recorded. */
async function site(t: Test, routes: Record<string, Route>) {
  const requests: Seen[] = []
  let inFlight = 0
  let maxInFlight = 0
  const server = http.createServer((req, res) => {
    requests.push({ path: req.url ?? '', headers: req.headers, at: performance.now() })
    inFlight++
    maxInFlight = Math.max(maxInFlight, inFlight)
    res.once('close', () => inFlight--)
    const route = routes[req.url ?? '']
    if (!route) return void res.writeHead(404, { 'content-type': 'text/plain' }).end('not found')
    void Promise.resolve(route(req, res)).catch(() => res.destroy())
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  t.teardown(() => {
    server.closeAllConnections()
    server.close()
  })
  const { port } = server.address() as { port: number }
  return {
    origin: `http://127.0.0.1:${port}`,
    port,
    requests,
    paths: () => requests.map((r) => r.path),
    get maxInFlight() { return maxInFlight },
  }
}

const send = (status: number, body: string | Buffer, headers: http.OutgoingHttpHeaders = {}): Route => (_req, res) => {
  res.writeHead(status, { 'content-type': 'text/html; charset=utf-8', ...headers }).end(body)
}
const redirect = (location: string, status = 302): Route => (_req, res) => res.writeHead(status, { location }).end()

/** A page with a real article: Readability has enough prose to choose it. */
function article(title: string, { links = [] as string[], head = '', words = 0 } = {}): string {
  const prose = words ? Array.from({ length: words }, (_, i) => `word${i}`).join(' ')
    : `${title} is a page about harbours, ships and the people who work on the quays every morning. `.repeat(6)
  return `<!doctype html><html lang="en"><head><title>${title}</title>${head}</head><body>
    <article><p>${prose}</p></article>
    ${links.map((href) => `<a href="${href}">${href}</a>`).join(' ')}
  </body></html>`
}

function memoryStore(known = new Map<string, KnownPage>()) {
  const pages: PageResult[] = []
  return {
    pages,
    result: (url: string) => pages.find((p) => p.url === url),
    known: async (url: string) => known.get(url) ?? null,
    page: async (result: PageResult) => { pages.push(result) },
  }
}

function crawlOptions(origin: string, extra: Partial<CrawlOptions> = {}): CrawlOptions {
  return {
    origin, maxPages: 50, concurrency: 2, delayMs: 0, maxBytes: 1_000_000, maxRedirects: 5, timeoutMs: 5_000,
    userAgent: USER_AGENT, allow, wordCountThreshold: 5, ...extra,
  }
}

const fetchOptions = (extra: Partial<FetchPageOptions> = {}): FetchPageOptions =>
  ({ maxBytes: 100_000, maxRedirects: 5, timeoutMs: 5_000, userAgent: USER_AGENT, ...extra })

t.test('the guard classifies addresses and parses the allowlist', async (t) => {
  for (const address of ['127.0.0.1', '10.1.2.3', '172.20.0.1', '192.168.1.1', '169.254.169.254', '::1', '::', 'fe80::1', 'fd00::1',
    '::ffff:127.0.0.1', '::7f00:1', '0.0.0.0', '100.64.0.1', '2002:7f00:1::1', '2001:0:7f00:1::1', 'fec0::1']) {
    t.ok(isInternalAddress(address), `${address} is internal`)
  }
  for (const address of ['93.184.216.34', '2606:2800:220:1:248:1893:25c8:1946', '8.8.8.8']) t.notOk(isInternalAddress(address), `${address} is public`)

  const list = parseAllowlist(' 127.0.0.1, 10.0.0.0/8 ,::1/128,')
  t.ok(list.check('127.0.0.1', 'ipv4') && list.check('10.200.0.1', 'ipv4') && list.check('::1', 'ipv6'), 'addresses and ranges are admitted')
  t.notOk(list.check('127.0.0.2', 'ipv4'), 'a single address admits only itself')
  t.equal(parseAllowlist(undefined).rules.length, 0, 'no setting admits nothing')
  for (const bad of ['localhost', '10.0.0.0/33', '10.0.0.0/', '1.2.3.4/8/9', '::1/129', '300.1.1.1']) {
    t.throws(() => parseAllowlist(`127.0.0.1, ${bad}`), { message: new RegExp(`"${bad.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}"`) }, `${bad} is named as the bad entry`)
  }
})

t.test('IP literals are refused before connecting unless the allowlist admits them', async (t) => {
  t.match(checkHost('127.0.0.1'), /127\.0\.0\.1 is not a public address/)
  t.match(checkHost('10.1.2.3', allow), /10\.1\.2\.3 is not a public address/, 'the allowlist admits only what it names')
  t.match(checkHost('[::1]', allow), /::1 is not a public address/)
  t.match(checkHost('[::ffff:127.0.0.1]'), /is not a public address/, 'an IPv4-mapped address is its IPv4 address')
  t.equal(checkHost('127.0.0.1', allow), null)
  t.equal(checkHost('[::1]', parseAllowlist('::1/128')), null)
  t.equal(checkHost('93.184.216.34'), null)
  t.equal(checkHost('example.com'), null, 'names are judged by the lookup')

  const server = await site(t, { '/': send(200, article('Home')) })
  const refused = await fetchPage(`${server.origin}/`, fetchOptions())
  t.match(refused, { kind: 'refused', reason: 'internal_address', detail: /127\.0\.0\.1 is not a public address/ })
  t.match(await fetchPage('http://10.0.0.1/', fetchOptions({ allow, timeoutMs: 60_000 })), { kind: 'refused', reason: 'internal_address' },
    'a private address is refused at once, not after a connect timeout')
  t.match(await fetchPage(`http://[::1]:${server.port}/`, fetchOptions({ allow })), { kind: 'refused', reason: 'internal_address' })
  t.same(server.paths(), [], 'nothing reached the server')
  t.match(await fetchPage(`${server.origin}/`, fetchOptions({ allow })), { kind: 'fetched', status: 200 })
})

t.test('a name resolving to an internal address is refused as the connection resolves it', async (t) => {
  const lookup = guardedLookup()
  const resolve = (look: typeof lookup) => new Promise<unknown>((done) => look('localhost', { all: true }, (error, addresses) => done(error ?? addresses)))
  t.match(await resolve(lookup), { message: 'localhost is not a public address' })
  t.match(await resolve(guardedLookup(parseAllowlist('127.0.0.1, ::1'))), [{ address: /^(127\.0\.0\.1|::1)$/ }], 'admitted by the allowlist')

  const server = await site(t, { '/': send(200, article('Home')), '/out': redirect('http://10.9.9.9/') })
  t.match(await fetchPage(`http://localhost:${server.port}/`, fetchOptions()),
    { kind: 'refused', reason: 'internal_address', detail: /localhost is not a public address/ })
  t.same(server.paths(), [], 'the connection was never made')
  t.match(await fetchPage(`http://localhost:${server.port}/`, fetchOptions({ allow: parseAllowlist('127.0.0.1, ::1') })), { kind: 'fetched', status: 200 })
  t.match(await fetchPage(`${server.origin}/out`, fetchOptions({ allow })), { kind: 'refused', reason: 'internal_address', url: 'http://10.9.9.9/' },
    'each redirect hop is checked again')
})

t.test('fetchPage: media type, charset, decoding, schemes', async (t) => {
  t.same(parseContentType('Text/HTML; Charset="ISO-8859-1"'), { mediaType: 'text/html', charset: 'iso-8859-1' })
  t.same(parseContentType(null), { mediaType: '', charset: null })
  t.equal(decodeBody(Buffer.from([0x63, 0x61, 0x66, 0xe9]), 'iso-8859-1'), 'café')
  t.equal(decodeBody(Buffer.from('café'), 'x-no-such-charset'), 'café', 'an unknown charset reads as UTF-8')
  const server = await site(t, {
    '/latin': send(200, Buffer.from([0x63, 0x61, 0x66, 0xe9]), { 'content-type': 'text/plain; charset=ISO-8859-1', etag: '"e1"', 'last-modified': 'Mon, 01 Jan 2024 00:00:00 GMT' }),
    '/missing': send(404, 'gone'),
    '/ftp': redirect('ftp://127.0.0.1/file'),
  })
  t.match(await fetchPage(`${server.origin}/latin#part`, fetchOptions({ allow })), {
    kind: 'fetched', url: `${server.origin}/latin`, status: 200, contentType: 'text/plain', charset: 'iso-8859-1',
    etag: '"e1"', lastModified: 'Mon, 01 Jan 2024 00:00:00 GMT',
  })
  t.match(await fetchPage(`${server.origin}/missing`, fetchOptions({ allow })), { kind: 'fetched', status: 404 }, 'a 404 is the caller\'s to judge')
  t.match(await fetchPage(`${server.origin}/ftp`, fetchOptions({ allow })), { kind: 'refused', reason: 'bad_scheme' })
  t.match(await fetchPage('file:///etc/passwd', fetchOptions({ allow })), { kind: 'refused', reason: 'bad_scheme' })
  t.match(await fetchPage(`http://127.0.0.1:1/`, fetchOptions({ allow })), { kind: 'refused', reason: 'network' }, 'a refused connection is an answer')
})

t.test('sitemaps: url sets, indexes, gzip, and malformed input', async (t) => {
  const urlset = '<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">' +
    '<url><loc> https://a.example/x?a=1&amp;b=2 </loc><lastmod>2024-05-01</lastmod></url><url><loc>https://a.example/y</loc></url>' +
    '<url><loc>ftp://a.example/z</loc></url></urlset>'
  const expected = { urls: [{ loc: 'https://a.example/x?a=1&b=2', lastmod: '2024-05-01' }, { loc: 'https://a.example/y', lastmod: null }], sitemaps: [] }
  t.same(parseSitemap(Buffer.from(urlset)), expected)
  t.same(parseSitemap(zlib.gzipSync(urlset)), expected, 'gzip is recognised by its magic bytes')
  t.same(parseSitemap(Buffer.from('<sitemapindex><sitemap><loc>https://a.example/s1.xml</loc></sitemap></sitemapindex>')),
    { urls: [], sitemaps: ['https://a.example/s1.xml'] })
  for (const broken of ['<urlset><url><loc>https://a.example/</loc></url', 'not xml at all', '', '<urlset>']) {
    t.same(parseSitemap(Buffer.from(broken)), { urls: [], sitemaps: [] }, `malformed: ${JSON.stringify(broken)}`)
  }
  t.same(parseSitemap(zlib.gzipSync(Buffer.from(`<urlset>${'<url><loc>https://a.example/</loc></url>'.repeat(1000)}</urlset>`)), 10_000),
    { urls: [], sitemaps: [] }, 'a compressed sitemap may not inflate past the bound')
  t.same(parseSitemap(Buffer.from(`<urlset>${'<url><loc>https://a.example/</loc></url>'.repeat(1000)}</urlset>`), 10_000),
    { urls: [], sitemaps: [] }, 'nor an uncompressed one be over it')
  t.equal(parseSitemap(zlib.gzipSync(Buffer.from(`<urlset>${'<url><loc>https://a.example/</loc></url>'.repeat(100)}</urlset>`)), 10_000).urls.length, 100,
    'the bound is on the inflated size, and a sitemap within it is read')
  t.same(parseSitemap(Buffer.from([0x1f, 0x8b, 1, 2, 3])), { urls: [], sitemaps: [] }, 'broken gzip')
})

t.test('robots.txt: rules for the user agent, and what a missing or failing file means', async (t) => {
  const robotsTxt = 'User-agent: *\nDisallow: /private\nCrawl-delay: 2\nSitemap: http://x.example/s.xml\n\nUser-agent: TaleCrawler\nDisallow: /not-for-tale\nCrawl-delay: 3\n'
  const server = await site(t, {
    '/robots.txt': send(200, robotsTxt, { 'content-type': 'text/plain' }),
  })
  const fetcher = (url: string) => fetchPage(url, fetchOptions({ allow }))
  const tale = await loadRobots(server.origin, fetcher, USER_AGENT)
  t.notOk(tale.isAllowed(`${server.origin}/not-for-tale/1`), 'the group naming the crawler applies to it')
  t.ok(tale.isAllowed(`${server.origin}/private`), 'and only that group')
  t.equal(tale.crawlDelaySeconds, 3)
  t.same(tale.sitemaps, ['http://x.example/s.xml'])
  t.notOk(tale.isAllowed('http://other.example/'), 'another origin is not covered by these rules')
  const other = await loadRobots(server.origin, fetcher, 'OtherBot/2')
  t.notOk(other.isAllowed(`${server.origin}/private/x`))
  t.ok(other.isAllowed(`${server.origin}/not-for-tale/1`))
  t.equal(other.crawlDelaySeconds, 2)

  const answers: Record<string, Route> = {
    '/404/robots.txt': send(404, 'no'), '/410/robots.txt': send(410, 'no'), '/403/robots.txt': send(403, 'no'),
    '/500/robots.txt': send(500, 'err'), '/503/robots.txt': send(503, 'later'), '/429/robots.txt': send(429, 'slow down'),
  }
  const statuses = await site(t, answers)
  // Each status gets its own origin by routing robots.txt through a path prefix.
  const under = (prefix: string) => (url: string) => fetcher(url.replace(statuses.origin, `${statuses.origin}${prefix}`))
  for (const status of ['404', '410', '403']) {
    t.ok((await loadRobots(statuses.origin, under(`/${status}`), USER_AGENT)).isAllowed(`${statuses.origin}/any`), `${status} allows everything`)
  }
  for (const status of ['500', '503', '429']) {
    t.notOk((await loadRobots(statuses.origin, under(`/${status}`), USER_AGENT)).isAllowed(`${statuses.origin}/`), `${status} disallows everything`)
  }
  t.notOk((await loadRobots('http://127.0.0.1:1', fetcher, USER_AGENT)).isAllowed('http://127.0.0.1:1/'), 'a network failure disallows everything')
  const unguarded = (url: string) => fetchPage(url, fetchOptions())
  t.notOk((await loadRobots(server.origin, unguarded, USER_AGENT)).isAllowed(`${server.origin}/`), 'a refused fetch disallows everything')
})

t.test('extraction: the article over the boilerplate, links from the whole page, directives', async (t) => {
  const html = `<!doctype html><html lang="de-CH"><head><title>Quay report</title>
    <meta name="description" content="About the quay">
    <meta name="ROBOTS" content="NoIndex">
    <link rel="Canonical" href="/canonical-quay#top">
    <base href="/docs/">
    </head><body>
    <nav class="menu"><a href="/home">Home navigation link</a> <a href="guide#intro">Guide</a> <a href="guide">Guide again</a></nav>
    <div class="sidebar"><a href="https://elsewhere.example/x">Sponsored sidebar words</a> <a rel="nofollow" href="/login">Login</a></div>
    <article>
      <h1>Quay report</h1>
      <p>The first paragraph of the report says the harbour master counted forty ships this week, more than ever before in spring.</p>
      <p>The second paragraph explains that the ships waited for the tide, and that the cranes on the east quay worked through the night.</p>
      <p>The third paragraph closes the report with the weather, which was calm, and with thanks to the pilots who guided every ship in.</p>
    </article>
    <footer class="footer">Copyright boilerplate footer text <a href="mailto:port@example.com">mail</a> <a href="javascript:void(0)">js</a></footer>
    <script>document.write('script words')</script>
    </body></html>`
  const page = extractPage(html, 'http://site.example/reports/quay', 5)
  t.equal(page.title, 'Quay report')
  t.equal(page.language, 'de-CH')
  t.equal(page.canonical, 'http://site.example/canonical-quay')
  t.ok(page.noindex, 'meta robots noindex, any case')
  t.notOk(page.nofollow)
  t.match(page.text, /^[^]*The first paragraph[^]*\n\nThe second paragraph[^]*\n\nThe third paragraph[^]*$/, 'paragraphs separated by a blank line')
  for (const boilerplate of ['Home navigation link', 'Sponsored sidebar', 'Copyright boilerplate', 'script words']) {
    t.notOk(page.text.includes(boilerplate), `no "${boilerplate}" in the text`)
  }
  t.same(page.links, ['http://site.example/home', 'http://site.example/docs/guide', 'https://elsewhere.example/x'],
    'absolute, resolved against <base>, without fragments, deduplicated, in order, nofollow and non-http links left out; nav links kept')
  t.ok(page.excerpt)

  const short = extractPage('<html><body><nav><a href="/">Home</a> <a href="/about">About us</a></nav><div><p>Only a few words of content here.</p></div></body></html>', 'http://s.example/', 1)
  t.equal(short.text, 'Only a few words of content here.', 'a short page\'s navigation is not its content')
  t.same(short.links, ['http://s.example/', 'http://s.example/about'])
  t.match(extractPage('<html><head><meta name="robots" content="none"></head><body><p>x</p></body></html>', 'http://s.example/', 1), { noindex: true, nofollow: true })
  t.match(extractPage('<html><head><meta name="robots" content="index, nofollow"></head><body><p>x</p></body></html>', 'http://s.example/', 1), { noindex: false, nofollow: true })
  const bare = extractPage('<p>A fragment <a href="/next">with a link</a> and no document shell.</p>', 'http://s.example/a/', 1)
  t.match(bare, { title: null, language: null, canonical: null, links: ['http://s.example/next'] })
  t.match(bare.text, /A fragment with a link and no document shell\./)
  t.match(extractPage('', 'http://s.example/', 1), { text: '', wordCount: 0, meetsThreshold: false })
})

t.test('word count and its threshold', async (t) => {
  const html = article('Counted', { words: 50 })
  t.match(extractPage(html, 'http://s.example/', 50), { wordCount: 50, meetsThreshold: true })
  t.match(extractPage(html, 'http://s.example/', 51), { wordCount: 50, meetsThreshold: false })

  const server = await site(t, { '/': send(200, article('Short', { words: 10, links: ['/long'] })), '/long': send(200, article('Long', { words: 80 })) })
  const store = memoryStore()
  await crawlSite(crawlOptions(server.origin, { wordCountThreshold: 40 }), store)
  t.match(store.result(`${server.origin}/`), { outcome: 'fetched', wordCount: 10, meetsThreshold: false })
  t.match(store.result(`${server.origin}/long`), { outcome: 'fetched', wordCount: 80, meetsThreshold: true })
})

t.test('sitemap discovery: robots Sitemap lines, a sitemap index, a gzipped sitemap', async (t) => {
  const routes: Record<string, Route> = {}
  const server = await site(t, routes)
  const o = server.origin
  Object.assign(routes, {
    '/robots.txt': send(200, `User-agent: *\nAllow: /\nSitemap: ${o}/sitemap-index.xml\n`, { 'content-type': 'text/plain' }),
    '/sitemap-index.xml': send(200, `<?xml version="1.0"?><sitemapindex><sitemap><loc>${o}/pages.xml</loc></sitemap><sitemap><loc>${o}/more.xml.gz</loc></sitemap>` +
      `<sitemap><loc>${o}/sitemap-index.xml</loc></sitemap></sitemapindex>`, { 'content-type': 'application/xml' }),
    '/pages.xml': send(200, `<urlset><url><loc>${o}/a</loc></url><url><loc>${o}/b#x</loc></url><url><loc>http://elsewhere.example/c</loc></url></urlset>`,
      { 'content-type': 'application/xml' }),
    '/more.xml.gz': send(200, zlib.gzipSync(`<urlset><url><loc>${o}/c</loc><lastmod>2024-01-01</lastmod></url></urlset>`), { 'content-type': 'application/gzip' }),
    '/': send(200, article('Home')), '/a': send(200, article('A')), '/b': send(200, article('B')), '/c': send(200, article('C')),
  })
  const store = memoryStore()
  const summary = await crawlSite(crawlOptions(o, { concurrency: 1 }), store)
  t.same(store.pages.map((p) => [p.url, p.outcome]), [[`${o}/a`, 'fetched'], [`${o}/b`, 'fetched'], [`${o}/c`, 'fetched'], [`${o}/`, 'fetched']],
    'the sitemaps\' pages first, in order, then the root')
  t.equal(server.paths().filter((p) => p === '/sitemap-index.xml').length, 1, 'an index listing itself is read once')
  t.notOk(server.paths().includes('/sitemap.xml'), 'the default sitemap is not guessed when robots.txt names one')
  t.match(summary, { visited: 4, fetched: 4, unchanged: 0, skipped: 0 })
  t.ok(summary.fetchMs > 0 && summary.extractMs > 0 && summary.storeMs >= 0, 'the time split is measured')

  // Without a Sitemap line (and without robots.txt) /sitemap.xml is read.
  const plain = await site(t, {
    '/sitemap.xml': (_req, res) => res.writeHead(200, { 'content-type': 'text/xml' }).end(`<urlset><url><loc>http://127.0.0.1:${plainPort()}/listed</loc></url></urlset>`),
    '/listed': send(200, article('Listed')), '/': send(200, article('Home')),
  })
  function plainPort() { return plain.port }
  const second = memoryStore()
  await crawlSite(crawlOptions(plain.origin), second)
  t.same(second.pages.map((p) => p.url), [`${plain.origin}/listed`, `${plain.origin}/`])
})

t.test('link discovery stays on the origin; nofollow and noindex are honoured', async (t) => {
  const elsewhere = await site(t, { '/': send(200, article('Elsewhere')), '/x': send(200, article('X')) })
  const server = await site(t, {
    '/': send(200, article('Home', { links: ['/one', '/two#section', `${elsewhere.origin}/x`, '/leave', 'mailto:a@b.example', '/noindexed', '/nofollowed'] })),
    '/one': send(200, article('One', { links: ['/', '/three'] })),
    '/two': send(200, article('Two')),
    '/three': send(200, article('Three')),
    '/leave': redirect(`${elsewhere.origin}/`),
    '/noindexed': send(200, article('Noindexed', { head: '<meta name="robots" content="noindex">', links: ['/from-noindex'] })),
    '/from-noindex': send(200, article('From noindex')),
    '/nofollowed': send(200, article('Nofollowed', { head: '<meta name="robots" content="nofollow">', links: ['/hidden'] })),
    '/hidden': send(200, article('Hidden')),
  })
  const store = memoryStore()
  await crawlSite(crawlOptions(server.origin), store)
  const o = server.origin
  t.same(store.pages.map((p) => p.url).sort(), [`${o}/`, `${o}/from-noindex`, `${o}/leave`, `${o}/nofollowed`, `${o}/noindexed`, `${o}/one`, `${o}/three`, `${o}/two`].sort(),
    'each URL once, the fragment dropped, nothing of another origin')
  t.same(elsewhere.paths(), [], 'the other site never saw a request, not even through a redirect')
  t.match(store.result(`${o}/leave`), { outcome: 'skipped', reason: 'off_site' })
  t.match(store.result(`${o}/noindexed`), { outcome: 'skipped', reason: 'noindex' })
  t.match(store.result(`${o}/from-noindex`), { outcome: 'fetched' }, 'a noindex page\'s links are still followed')
  t.match(store.result(`${o}/nofollowed`), { outcome: 'fetched' })
  t.notOk(server.paths().includes('/hidden'), 'a nofollow page\'s links are not followed')
  t.match(store.result(`${o}/one`), {
    outcome: 'fetched', status: 200, title: 'One', language: 'en', text: /One is a page about harbours/, etag: null, lastModified: null,
    contentHash: /^[0-9a-f]{64}$/,
  })
  const one = store.result(`${o}/one`) as Extract<PageResult, { outcome: 'fetched' }>
  const { createHash } = await import('node:crypto')
  t.equal(one.contentHash, createHash('sha256').update(one.text).digest('hex'), 'the hash is the text\'s')
})

t.test('robots.txt disallows are honoured without fetching, redirects included', async (t) => {
  const server = await site(t, {
    '/robots.txt': send(200, 'User-agent: *\nDisallow: /private\n\nUser-agent: TaleCrawler\nDisallow: /private\nDisallow: /tale-only\n', { 'content-type': 'text/plain' }),
    '/': send(200, article('Home', { links: ['/private/secret', '/public', '/tale-only', '/sneaky'] })),
    '/public': send(200, article('Public')),
    '/private/secret': send(200, article('Secret')),
    '/tale-only': send(200, article('Tale only')),
    '/sneaky': redirect('/private/other'),
    '/private/other': send(200, article('Other secret')),
  })
  const store = memoryStore()
  const summary = await crawlSite(crawlOptions(server.origin), store)
  const o = server.origin
  t.match(store.result(`${o}/private/secret`), { outcome: 'skipped', reason: 'disallowed' })
  t.match(store.result(`${o}/tale-only`), { outcome: 'skipped', reason: 'disallowed' }, 'the crawler\'s own group applies')
  t.match(store.result(`${o}/sneaky`), { outcome: 'skipped', reason: 'disallowed' }, 'a redirect into a disallowed path is not followed')
  t.match(store.result(`${o}/public`), { outcome: 'fetched' })
  for (const path of ['/private/secret', '/tale-only', '/private/other']) t.notOk(server.paths().includes(path), `${path} was never requested`)
  t.equal(server.paths().filter((p) => p === '/robots.txt').length, 1)
  t.equal(server.paths()[0], '/robots.txt', 'robots.txt is read first')
  t.match(summary, { visited: 5, fetched: 2, skipped: 3 })
})

t.test('a robots.txt answering 5xx disallows the whole site for the scan', async (t) => {
  const server = await site(t, {
    '/robots.txt': send(503, 'maintenance'),
    '/': send(200, article('Home', { links: ['/a'] })),
    '/sitemap.xml': send(200, '<urlset><url><loc>/a</loc></url></urlset>'),
  })
  const store = memoryStore()
  const summary = await crawlSite(crawlOptions(server.origin), store)
  t.same(server.paths(), ['/robots.txt'], 'nothing but robots.txt was requested')
  t.same(store.pages, [{ url: `${server.origin}/`, outcome: 'skipped', reason: 'disallowed', detail: 'robots.txt disallows this URL' }])
  t.match(summary, { visited: 1, skipped: 1, fetched: 0 })
})

t.test('redirects: loops, too many, and a good redirect', async (t) => {
  const hops: Record<string, Route> = {}
  for (let i = 1; i <= 10; i++) hops[`/hop/${i}`] = redirect(`/hop/${i + 1}`, i % 2 ? 301 : 307)
  const server = await site(t, {
    ...hops,
    '/': send(200, article('Home', { links: ['/loop-a', '/hop/1', '/moved'] })),
    '/loop-a': redirect('/loop-b'),
    '/loop-b': redirect('/loop-a#again'),
    '/moved': redirect('/landing', 301),
    '/landing': send(200, article('Landing', { links: ['/landing'] })),
  })
  const store = memoryStore()
  await crawlSite(crawlOptions(server.origin, { maxRedirects: 3, concurrency: 1 }), store)
  const o = server.origin
  t.match(store.result(`${o}/loop-a`), { outcome: 'skipped', reason: 'redirect_loop' })
  t.match(store.result(`${o}/hop/1`), { outcome: 'skipped', reason: 'too_many_redirects' })
  t.same(server.paths().filter((p) => p.startsWith('/hop/')), ['/hop/1', '/hop/2', '/hop/3', '/hop/4'], 'the first request and three redirects, no more')
  t.match(store.result(`${o}/moved`), { outcome: 'fetched', title: 'Landing' })
  t.equal(server.paths().filter((p) => p === '/landing').length, 1, 'the redirect target is not visited again when linked')

  t.match(await fetchPage(`${o}/loop-a`, fetchOptions({ allow, maxRedirects: 20 })), { kind: 'refused', reason: 'redirect_loop' }, 'a loop is a loop at any limit')
  t.match(await fetchPage(`${o}/moved`, fetchOptions({ allow, maxRedirects: 0 })), { kind: 'refused', reason: 'too_many_redirects' })
})

t.test('oversized pages are refused, declared or streamed', async (t) => {
  const server = await site(t, {
    '/': send(200, article('Home', { links: ['/declared', '/streamed', '/small'] })),
    // Declares more than the limit, then sends little and never finishes: only the
    // declared length can refuse it in time.
    '/declared': (_req, res) => { res.writeHead(200, { 'content-type': 'text/html', 'content-length': '50000' }); res.write('<html>') },
    '/streamed': async (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' })
      for (let i = 0; i < 50; i++) res.write('x'.repeat(1000))
      res.end()
    },
    '/small': send(200, article('Small')),
  })
  const store = memoryStore()
  await crawlSite(crawlOptions(server.origin, { maxBytes: 10_000, timeoutMs: 3_000 }), store)
  const o = server.origin
  t.match(store.result(`${o}/declared`), { outcome: 'skipped', reason: 'too_large', detail: /declares 50000 bytes/ })
  t.match(store.result(`${o}/streamed`), { outcome: 'skipped', reason: 'too_large', detail: /over the 10000 byte limit/ })
  t.notOk(server.requests.find((r) => r.path === '/streamed')?.headers['content-length'], 'sanity: the request carried no body')
  t.match(store.result(`${o}/small`), { outcome: 'fetched' })
})

t.test('a page that never finishes times out', async (t) => {
  const server = await site(t, { '/slow': (_req, res) => { res.writeHead(200, { 'content-type': 'text/html' }); res.write('<html>') } })
  t.match(await fetchPage(`${server.origin}/slow`, fetchOptions({ allow, timeoutMs: 300 })), { kind: 'refused', reason: 'timeout' })
})

t.test('non-HTML pages and HTTP errors are skipped', async (t) => {
  const server = await site(t, {
    '/': send(200, article('Home', { links: ['/doc.pdf', '/data.json', '/missing', '/broken', '/untyped'] })),
    '/doc.pdf': send(200, '%PDF-1.4', { 'content-type': 'application/pdf' }),
    '/data.json': send(200, '{}', { 'content-type': 'application/json; charset=utf-8' }),
    '/broken': send(500, 'oops'),
    '/untyped': (_req, res) => { res.removeHeader('content-type'); res.writeHead(200).end(article('Untyped')) },
  })
  const store = memoryStore()
  await crawlSite(crawlOptions(server.origin), store)
  const o = server.origin
  t.match(store.result(`${o}/doc.pdf`), { outcome: 'skipped', reason: 'not_html', status: 200, detail: /application\/pdf/ })
  t.match(store.result(`${o}/data.json`), { outcome: 'skipped', reason: 'not_html' })
  t.match(store.result(`${o}/missing`), { outcome: 'skipped', reason: 'http_error', status: 404 })
  t.match(store.result(`${o}/broken`), { outcome: 'skipped', reason: 'http_error', status: 500 })
  t.match(store.result(`${o}/untyped`), { outcome: 'fetched', title: 'Untyped' }, 'a page without a type that starts like HTML is HTML')
})

t.test('conditional requests: validators from the store are sent, 304 is unchanged', async (t) => {
  const routes: Record<string, Route> = {
    '/': (req, res) => {
      if (req.headers['if-none-match'] === '"home-v1"') return void res.writeHead(304, { etag: '"home-v1"' }).end()
      res.writeHead(200, { 'content-type': 'text/html', etag: '"home-v1"' }).end(article('Home', { links: ['/dated'] }))
    },
    '/dated': (req, res) => {
      if (req.headers['if-modified-since'] === 'Tue, 02 Jan 2024 10:00:00 GMT') return void res.writeHead(304).end()
      res.writeHead(200, { 'content-type': 'text/html', 'last-modified': 'Tue, 02 Jan 2024 10:00:00 GMT' }).end(article('Dated'))
    },
  }
  const server = await site(t, routes)
  const o = server.origin
  const first = memoryStore()
  await crawlSite(crawlOptions(o), first)
  t.match(first.result(`${o}/`), { outcome: 'fetched', etag: '"home-v1"', lastModified: null })
  t.match(first.result(`${o}/dated`), { outcome: 'fetched', etag: null, lastModified: 'Tue, 02 Jan 2024 10:00:00 GMT' })
  t.notOk(server.requests.some((r) => r.headers['if-none-match'] || r.headers['if-modified-since']), 'no validators without stored ones')

  t.match(first.result(`${o}/`), { links: [`${o}/dated`] }, 'the links kept for the next crawl')
  const known = new Map<string, KnownPage>()
  for (const page of first.pages) if (page.outcome === 'fetched') known.set(page.url, { etag: page.etag, lastModified: page.lastModified, links: page.links })
  const before = server.requests.length
  const second = memoryStore(known)
  const summary = await crawlSite(crawlOptions(o), second)
  const again = server.requests.slice(before)
  t.equal(again.find((r) => r.path === '/')?.headers['if-none-match'], '"home-v1"')
  t.equal(again.find((r) => r.path === '/dated')?.headers['if-modified-since'], 'Tue, 02 Jan 2024 10:00:00 GMT')
  t.same(second.pages.map((p) => [p.url, p.outcome]), [[`${o}/`, 'unchanged'], [`${o}/dated`, 'unchanged']],
    'both unchanged; /dated is reached through the links the store kept of the unchanged root')
  t.match(summary, { visited: 2, unchanged: 2, fetched: 0 })
  // Without kept links an unchanged root leads nowhere; a sitemap still lists the rest.
  const forgetful = new Map([...known].map(([url, page]) => [url, { etag: page.etag, lastModified: page.lastModified }]))
  const third = memoryStore(forgetful)
  await crawlSite(crawlOptions(o), third)
  t.same(third.pages.map((p) => [p.url, p.outcome]), [[`${o}/`, 'unchanged']])
  routes['/sitemap.xml'] = send(200, `<urlset><url><loc>${o}/dated</loc></url></urlset>`, { 'content-type': 'application/xml' })
  const fourth = memoryStore(forgetful)
  await crawlSite(crawlOptions(o), fourth)
  t.same(fourth.pages.map((p) => [p.url, p.outcome]), [[`${o}/dated`, 'unchanged'], [`${o}/`, 'unchanged']])
  t.match(await fetchPage(`${o}/`, fetchOptions({ allow, etag: '"home-v1"' })), { kind: 'not-modified', url: `${o}/`, etag: '"home-v1"' })
})

t.test('politeness: concurrency bounds requests in flight, delays space them', async (t) => {
  const slow = (title: string, links: string[] = []): Route => async (_req, res) => {
    await new Promise((resolve) => setTimeout(resolve, 40))
    send(200, article(title, { links }))(_req, res)
  }
  const pages = Array.from({ length: 6 }, (_, i) => `/p${i}`)
  const routes: Record<string, Route> = { '/': slow('Home', pages) }
  for (const path of pages) routes[path] = slow(path)
  const one = await site(t, routes)
  await crawlSite(crawlOptions(one.origin, { concurrency: 1 }), memoryStore())
  t.equal(one.requests.length, 9, 'robots.txt, sitemap.xml and seven pages')
  t.equal(one.maxInFlight, 1, 'concurrency 1: never two requests at once')

  // A page answers only once another request is in flight (or after a while), so
  // concurrency 3 shows overlap without depending on timing.
  let waiting: (() => void) | null = null
  const paired = (title: string, links: string[] = []): Route => async (_req, res) => {
    const release = waiting
    if (release) {
      waiting = null
      release()
    } else {
      await new Promise<void>((resolve) => { waiting = resolve; setTimeout(resolve, 1000) })
    }
    send(200, article(title, { links }))(_req, res)
  }
  const pairedRoutes: Record<string, Route> = { '/': send(200, article('Home', { links: pages })) }
  for (const path of pages) pairedRoutes[path] = paired(path)
  const three = await site(t, pairedRoutes)
  await crawlSite(crawlOptions(three.origin, { concurrency: 3 }), memoryStore())
  t.ok(three.maxInFlight > 1 && three.maxInFlight <= 3, `concurrency 3: requests overlap, at most three (${three.maxInFlight})`)

  // delayMs spaces request starts: four requests, three gaps of at least 150 ms. The
  // bound asserted allows a whole delay of scheduling noise.
  const spaced = await site(t, { '/': send(200, article('Home', { links: ['/a'] })), '/a': send(200, article('A')) })
  await crawlSite(crawlOptions(spaced.origin, { concurrency: 3, delayMs: 150 }), memoryStore())
  t.equal(spaced.requests.length, 4)
  t.ok(spaced.requests.at(-1)!.at - spaced.requests[0]!.at >= 300, 'the requests took at least the delays between them')

  // The site's Crawl-delay raises the gap after robots.txt is read.
  const delayed = await site(t, {
    '/robots.txt': send(200, 'User-agent: *\nCrawl-delay: 0.5\n', { 'content-type': 'text/plain' }),
    '/': send(200, article('Home', { links: ['/a'] })), '/a': send(200, article('A')),
  })
  await crawlSite(crawlOptions(delayed.origin, { concurrency: 3, delayMs: 0 }), memoryStore())
  t.same(delayed.paths(), ['/robots.txt', '/sitemap.xml', '/', '/a'])
  t.ok(delayed.requests.at(-1)!.at - delayed.requests[1]!.at >= 500, 'the crawl-delay spaced the requests after robots.txt')

  t.equal(effectiveDelayMs(100, null), 100)
  t.equal(effectiveDelayMs(100, 2), 2000, 'Crawl-delay raises the delay')
  t.equal(effectiveDelayMs(5000, 2), 5000, 'but never lowers it')
  t.equal(effectiveDelayMs(0, 86_400), MAX_CRAWL_DELAY_MS, 'and is capped')
  t.equal(MAX_CRAWL_DELAY_MS, 60_000)
})

t.test('maxPages bounds the pages visited', async (t) => {
  const pages = Array.from({ length: 20 }, (_, i) => `/p${i}`)
  const routes: Record<string, Route> = { '/': send(200, article('Home', { links: pages })) }
  for (const path of pages) routes[path] = send(200, article(path, { links: pages }))
  const server = await site(t, routes)
  const store = memoryStore()
  const summary = await crawlSite(crawlOptions(server.origin, { maxPages: 5, concurrency: 3 }), store)
  t.equal(store.pages.length, 5)
  t.equal(summary.visited, 5)
  t.equal(server.paths().filter((p) => p === '/' || /^\/p\d+$/.test(p)).length, 5, 'no page beyond the bound was requested')
  t.equal(new Set(store.pages.map((p) => p.url)).size, 5, 'each once')
})

t.test('URLs are normalized before they are compared', async (t) => {
  t.equal(normalizeUrl('HTTP://Example.COM:80/a?#frag')?.href, 'http://example.com/a')
  t.equal(normalizeUrl('https://example.com:443/a?b=1#x')?.href, 'https://example.com/a?b=1')
  t.equal(normalizeUrl('mailto:a@b.example'), null)
  t.equal(normalizeUrl('../x', 'http://example.com/a/b/c')?.href, 'http://example.com/a/x')
})

t.test('a store failure ends the crawl with its error; an abort ends it quietly', async (t) => {
  const pages = Array.from({ length: 5 }, (_, i) => `/p${i}`)
  const routes: Record<string, Route> = { '/': send(200, article('Home', { links: pages })) }
  for (const path of pages) routes[path] = send(200, article(path))
  const server = await site(t, routes)
  const failing = { known: async () => null, page: async () => { throw new Error('the database is gone') } }
  await t.rejects(crawlSite(crawlOptions(server.origin), failing), { message: 'the database is gone' })

  const controller = new AbortController()
  const store = memoryStore()
  const stopping = { known: store.known, page: async (result: PageResult) => { await store.page(result); controller.abort() } }
  const summary = await crawlSite(crawlOptions(server.origin, { concurrency: 1, signal: controller.signal }), stopping)
  t.equal(summary.visited, 1, 'nothing is visited after the abort')
})
