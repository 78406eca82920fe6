// Sitemaps (sitemaps.org): a <urlset> lists pages, a <sitemapindex> lists more
// sitemaps. A site's sitemap is input from the outside, so a broken one is an empty
// one and a compressed one may not grow past a bound when inflated.
import zlib from 'node:zlib'
import { XMLParser } from 'fast-xml-parser'

export type SitemapEntries = { urls: { loc: string; lastmod: string | null }[]; sitemaps: string[] }

/** The protocol's own ceiling for one sitemap, uncompressed. */
export const MAX_SITEMAP_BYTES = 50 * 1024 * 1024

const parser = new XMLParser({
  ignoreAttributes: true,
  removeNSPrefix: true,
  parseTagValue: false,
  trimValues: true,
  isArray: (name) => name === 'url' || name === 'sitemap',
  // &amp; in a <loc> query must be decoded; declared entities are bounded so a
  // document of nested entities cannot expand without end.
  processEntities: { enabled: true, maxEntityCount: 100, maxTotalExpansions: 10_000, maxExpandedLength: 1_000_000 },
  htmlEntities: false,
})

export function parseSitemap(body: Buffer, maxBytes = MAX_SITEMAP_BYTES): SitemapEntries {
  const empty: SitemapEntries = { urls: [], sitemaps: [] }
  let xml: Buffer = body
  // A .gz sitemap served without Content-Encoding arrives compressed; one a server
  // already inflated does not start with the gzip magic bytes, so they decide.
  if (body.length >= 2 && body[0] === 0x1f && body[1] === 0x8b) {
    try {
      xml = zlib.gunzipSync(body, { maxOutputLength: maxBytes })
    } catch {
      return empty
    }
  } else if (body.length > maxBytes) {
    return empty
  }
  let document: Record<string, unknown>
  try {
    document = parser.parse(xml.toString('utf8'), true) as Record<string, unknown>
  } catch {
    return empty
  }
  const urlset = record(document.urlset)
  const index = record(document.sitemapindex)
  return {
    urls: list(urlset?.url).flatMap((entry) => {
      const loc = absoluteHttpUrl(text(entry.loc))
      return loc ? [{ loc, lastmod: text(entry.lastmod) }] : []
    }),
    sitemaps: list(index?.sitemap).flatMap((entry) => {
      const loc = absoluteHttpUrl(text(entry.loc))
      return loc ? [loc] : []
    }),
  }
}

function record(value: unknown): Record<string, unknown> | null {
  return value && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : null
}

function list(value: unknown): Record<string, unknown>[] {
  if (!Array.isArray(value)) return []
  return value.flatMap((item) => {
    const entry = record(item)
    return entry ? [entry] : []
  })
}

function text(value: unknown): string | null {
  return typeof value === 'string' && value.trim() ? value.trim() : null
}

function absoluteHttpUrl(value: string | null): string | null {
  if (!value) return null
  try {
    const url = new URL(value)
    return url.protocol === 'http:' || url.protocol === 'https:' ? url.href : null
  } catch {
    return null
  }
}
