// Successful responses: JSON with ETag and revalidation on reads.
import { createHash } from 'node:crypto'
import type { IncomingMessage, ServerResponse } from 'node:http'

export function etagOf(text: string): string {
  return `"${createHash('sha256').update(text).digest('base64url').slice(0, 27)}"`
}

// The ETag comes back exactly as issued, or weak, or with the suffix a compressing
// proxy appends (-gzip, -zstd).
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

export function writeJson(req: IncomingMessage, res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  for (const [name, value] of Object.entries(headers)) res.setHeader(name, value)
  if (status === 204 || body === undefined) {
    res.statusCode = status
    res.end()
    return
  }
  const text = JSON.stringify(body)
  res.setHeader('content-type', 'application/json; charset=utf-8')
  const isRead = req.method === 'GET' || req.method === 'HEAD'
  if (isRead && status === 200) {
    const etag = etagOf(text)
    res.setHeader('etag', etag)
    res.setHeader('cache-control', 'private, no-cache')
    if (etagMatches(req.headers['if-none-match'], etag)) {
      res.removeHeader('content-type')
      res.statusCode = 304
      res.end()
      return
    }
  }
  res.statusCode = status
  res.setHeader('content-length', Buffer.byteLength(text))
  res.end(req.method === 'HEAD' ? undefined : text)
}
