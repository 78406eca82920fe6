// Successful responses: ETag and revalidation on reads, compression when offered,
// HEAD answered with the uncompressed GET length and no body.
import { createHash } from 'node:crypto'
import type { IncomingMessage, ServerResponse } from 'node:http'
import { COMPRESSION_THRESHOLD, compressBody, negotiateEncoding } from './compression.ts'

export function etagOf(content: Buffer): string {
  return `"${createHash('sha256').update(content).digest('base64url').slice(0, 27)}"`
}

// The ETag comes back exactly as issued, or weak, or with the suffix a compressed
// representation carries (-gzip, -zstd).
export function etagMatches(header: string | undefined, etag: string): boolean {
  if (!header) return false
  const opaque = etag.slice(1, -1)
  return header.split(',').some((candidate) => {
    const tag = candidate.trim().replace(/^W\//, '')
    if (tag === '*') return true
    const inner = tag.startsWith('"') && tag.endsWith('"') ? tag.slice(1, -1) : tag
    return inner === opaque || inner === `${opaque}-gzip` || inner === `${opaque}-zstd`
  })
}

export interface Payload {
  /** A JSON value, serialized here. */
  json?: unknown
  /** Bytes or text as they are, with their content type. */
  raw?: Buffer | string
  contentType?: string
}

export function writeReply(req: IncomingMessage, res: ServerResponse, status: number, payload: Payload, headers: Record<string, string> = {}): void {
  for (const [name, value] of Object.entries(headers)) res.setHeader(name, value)
  const hasBody = payload.raw !== undefined || payload.json !== undefined
  if (status === 204 || !hasBody) {
    res.statusCode = status
    res.end()
    return
  }
  const content = payload.raw !== undefined
    ? (typeof payload.raw === 'string' ? Buffer.from(payload.raw) : payload.raw)
    : Buffer.from(JSON.stringify(payload.json))
  const contentType = payload.contentType ?? 'application/json; charset=utf-8'
  const isRead = req.method === 'GET' || req.method === 'HEAD'
  const compressible = req.method !== 'HEAD' && content.length > COMPRESSION_THRESHOLD
  const encoding = compressible ? negotiateEncoding(req.headers['accept-encoding']) : null
  if (content.length > COMPRESSION_THRESHOLD) res.setHeader('vary', 'Accept-Encoding')

  // A reply that must never be kept (the app's pages) is not revalidated either.
  const stored = res.getHeader('cache-control') !== 'no-store'
  if (isRead && status === 200 && stored) {
    const etag = etagOf(content)
    res.setHeader('etag', encoding ? `${etag.slice(0, -1)}-${encoding}"` : etag)
    res.setHeader('cache-control', 'private, no-cache')
    if (etagMatches(req.headers['if-none-match'], etag)) {
      res.statusCode = 304
      res.end()
      return
    }
  }

  res.statusCode = status
  res.setHeader('content-type', contentType)
  if (req.method === 'HEAD') {
    res.setHeader('content-length', content.length)
    res.end()
    return
  }
  const body = encoding ? compressBody(content, encoding) : content
  if (encoding) res.setHeader('content-encoding', encoding)
  res.setHeader('content-length', body.length)
  res.end(body)
}
