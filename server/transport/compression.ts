// Response compression: gzip or zstd (never br) when the client offers it, for
// bodies above about 512 bytes. Node 20's zlib has no zstd; zstd-napi builds the
// reference library from its bundled sources.
import { gzipSync, constants } from 'node:zlib'
import { compress as zstdCompress } from 'zstd-napi'

export type Encoding = 'zstd' | 'gzip'

export const COMPRESSION_THRESHOLD = 512

/** The best encoding the Accept-Encoding header admits, or null for identity. */
export function negotiateEncoding(header: string | string[] | undefined): Encoding | null {
  if (!header) return null
  const offered = new Map<string, number>()
  for (const part of (Array.isArray(header) ? header.join(',') : header).split(',')) {
    const [name, ...params] = part.trim().toLowerCase().split(';')
    if (!name) continue
    const q = params.map((p) => p.trim()).find((p) => p.startsWith('q='))
    const quality = q ? Number(q.slice(2)) : 1
    offered.set(name, Number.isFinite(quality) ? quality : 0)
  }
  const quality = (name: Encoding) => offered.get(name) ?? offered.get('*') ?? 0
  const ranked = (['zstd', 'gzip'] as const).filter((e) => quality(e) > 0).sort((a, b) => quality(b) - quality(a))
  return ranked[0] ?? null
}

export function compressBody(body: Buffer, encoding: Encoding): Buffer {
  // Fast levels: these are small JSON documents on a latency-sensitive path.
  return encoding === 'gzip'
    ? gzipSync(body, { level: 4, strategy: constants.Z_DEFAULT_STRATEGY })
    : zstdCompress(body, { compressionLevel: 3 })
}
