// The website the crawler bench scans, in a process of its own (as a real site is
// elsewhere), so the crawl's CPU work never delays the site's answers and the
// site's never counts as the crawl's. Every page is rendered before the first request:
// serving one costs a lookup and a write.
//
// SITE_PAGES pages: `/` and `/pages/1` ... `/pages/{n-1}`, each a few hundred words
// of prose-like text in an <article> between a navigation bar, a sidebar and a footer
// (which Readability leaves out), with links to five other pages of the site in its
// text; /sitemap.xml lists every page and /robots.txt allows everything. It listens
// on two loopback ports (a website is one origin: each measurement gets its own) and
// prints them as one JSON line on stdout.
import http from 'node:http'
import { createHash } from 'node:crypto'
import type { AddressInfo } from 'node:net'

const PAGES = Number(process.env.SITE_PAGES ?? 2000)

// Deterministic pseudo-random numbers: the same site on every run.
function random(seed: number): () => number {
  let state = seed >>> 0
  return () => {
    state = (state * 1664525 + 1013904223) >>> 0
    return state / 2 ** 32
  }
}

const vocabulary = (
  'the of and to in is was for on that with as by at from it his an were are which be this had not but they has have ' +
  'harbour lighthouse keeper tide chart ship storm coast island village river bridge market winter summer morning ' +
  'evening lantern signal channel current north south east west shore cliff fisher boat sail rope anchor voyage ' +
  'records journal letter account survey season weather wind rain fog light distance passage crossing mill road ' +
  'railway station clock tower church school garden orchard harvest grain bread salt iron copper timber stone ' +
  'family council merchant trade ledger price tax century decade year hour minute early late long short quiet ' +
  'careful steady bright dark narrow broad old new first last many few every other small large great common ' +
  'kept built sailed measured recorded carried opened closed repaired watched followed crossed returned wrote'
).split(' ')

function sentence(next: () => number): string {
  const length = 8 + Math.floor(next() * 10)
  const words = Array.from({ length }, () => vocabulary[Math.floor(next() * vocabulary.length)]!)
  // A comma now and then, as prose has (Readability scores commas).
  if (length > 12) words[Math.floor(length / 2)] += ','
  const text = words.join(' ')
  return text[0]!.toUpperCase() + text.slice(1) + '.'
}

const pathOf = (n: number) => (n === 0 ? '/' : `/pages/${n}`)

/** Five other pages: the next one (so every page is reachable by links too) and four spread over the site. */
function linksOf(n: number): number[] {
  const targets = [n + 1, n * 7 + 3, n * 31 + 11, n * 97 + 5, n + Math.floor(PAGES / 2)].map((t) => t % PAGES)
  return [...new Set(targets.filter((t) => t !== n))]
}

function page(n: number): string {
  const next = random(1000 + n)
  const title = `${sentence(next).slice(0, -1).split(' ').slice(0, 5).join(' ')} (${n})`
  const links = linksOf(n)
  const paragraphs: string[] = []
  for (let p = 0; p < 6; p++) {
    const sentences = Array.from({ length: 4 }, () => sentence(next))
    // One link of the page in each of the first paragraphs, inside the prose.
    const link = links[p]
    if (link !== undefined) sentences[2] = `See <a href="${pathOf(link)}">the account of page ${link}</a>. ${sentences[2]}`
    paragraphs.push(`<p>${sentences.join(' ')}</p>`)
  }
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${title}</title>
<meta name="description" content="${sentence(next).slice(0, 120)}"></head>
<body>
<header><a href="/">Harbour records</a><nav><ul><li><a href="/">Home</a></li><li><a href="/pages/1">Journal</a></li>
<li><a href="/pages/2">Charts</a></li><li><a href="/pages/3">Letters</a></li></ul></nav></header>
<main><article><h1>${title}</h1>
${paragraphs.join('\n')}
</article>
<aside><h2>Related</h2><ul>${links.slice(0, 3).map((l) => `<li><a href="${pathOf(l)}">Page ${l}</a></li>`).join('')}</ul></aside></main>
<footer><p>Harbour records society. All rights reserved.</p><a href="/">Home</a></footer>
</body></html>`
}

type Rendered = { body: Buffer; etag: string }
const lastModified = new Date(Date.UTC(2026, 0, 1)).toUTCString()
const pages = new Map<string, Rendered>()
for (let n = 0; n < PAGES; n++) {
  const body = Buffer.from(page(n))
  pages.set(pathOf(n), { body, etag: `"${createHash('sha1').update(body).digest('hex').slice(0, 16)}"` })
}

function serve(req: http.IncomingMessage, res: http.ServerResponse) {
  const path = (req.url ?? '/').split('?')[0]!
  const origin = `http://${req.headers.host}`
  if (path === '/robots.txt') {
    res.writeHead(200, { 'content-type': 'text/plain' })
    return res.end(`User-agent: *\nAllow: /\nSitemap: ${origin}/sitemap.xml\n`)
  }
  if (path === '/sitemap.xml') {
    res.writeHead(200, { 'content-type': 'application/xml' })
    const urls = [...pages.keys()].map((p) => `<url><loc>${origin}${p}</loc><lastmod>2026-01-01</lastmod></url>`).join('')
    return res.end(`<?xml version="1.0" encoding="UTF-8"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">${urls}</urlset>`)
  }
  const found = pages.get(path)
  if (!found) {
    res.writeHead(404, { 'content-type': 'text/html' })
    return res.end('<p>Not found</p>')
  }
  if (req.headers['if-none-match'] === found.etag) {
    res.writeHead(304, { etag: found.etag })
    return res.end()
  }
  res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'content-length': found.body.length, etag: found.etag,
                      'last-modified': lastModified })
  res.end(found.body)
}

const ports: number[] = []
for (let i = 0; i < 2; i++) {
  const server = http.createServer(serve)
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  ports.push((server.address() as AddressInfo).port)
}
const words = [...pages.values()].reduce((sum, p) => sum + p.body.toString().replace(/<[^>]+>/g, ' ').split(/\s+/).filter(Boolean).length, 0)
process.stdout.write(JSON.stringify({ ports, pages: PAGES, wordsPerPage: Math.round(words / PAGES) }) + '\n')
