// The indexing service started in-process on a loopback port, with a client that checks
// every JSON answer against the service's own /openapi.json.
import type { Test } from 'tap'
import { loadConfig } from '../../server/core/config.ts'
import { createLogger, type Level } from '../../server/core/log.ts'
import { startIndexingService } from '../../server/services/indexing/service.ts'
import { responseChecker, type ResponseChecker } from '../lib/openapi.ts'

export interface Answer {
  status: number
  headers: Headers
  text: string
  body: any
}

export interface IndexingClient {
  url: string
  /** A JSON request (body serialized) or a FormData upload; headers as given. */
  request: (method: string, path: string, options?: { body?: unknown; form?: FormData; raw?: string; headers?: Record<string, string> }) => Promise<Answer>
  close: () => Promise<void>
}

export async function startIndexing(t: Test, databaseUrl: string, env: Record<string, string> = {}, runner = true): Promise<IndexingClient> {
  const config = loadConfig({ DATABASE_URL: databaseUrl, LOG_LEVEL: 'silent', INDEXING_PORT: '0', ...env })
  const log = createLogger((process.env.TEST_LOG_LEVEL as Level | undefined) ?? 'silent')
  const service = await startIndexingService(config, databaseUrl, { log, store: null, port: 0, runner })
  let closed = false
  const close = async () => {
    if (closed) return
    closed = true
    await service.close()
  }
  t.teardown(close)
  let checker: Promise<ResponseChecker> | undefined
  const published = () => checker ??= fetch(`${service.url}/openapi.json`).then((res) => res.json() as Promise<Record<string, unknown>>).then(responseChecker)
  const request: IndexingClient['request'] = async (method, path, options = {}) => {
    const headers: Record<string, string> = { ...options.headers }
    let body: string | FormData | undefined
    if (options.form) body = options.form
    else if (options.raw !== undefined) body = options.raw
    else if (options.body !== undefined) {
      body = JSON.stringify(options.body)
      headers['content-type'] ??= 'application/json'
    }
    const res = await fetch(`${service.url}${path}`, { method, headers, body })
    const text = await res.text()
    let parsed: unknown
    try {
      parsed = text === '' ? undefined : JSON.parse(text)
    } catch {
      parsed = undefined
    }
    ;(await published()).check(method, path, res.status, res.headers.get('content-type'), parsed)
    return { status: res.status, headers: res.headers, text, body: parsed }
  }
  return { url: service.url, request, close }
}

/** A multipart upload form. */
export function uploadForm(fields: { file?: { name?: string; content: string | Uint8Array }; file_id?: string; sync?: string; metadata?: string; [extra: string]: unknown }): FormData {
  const form = new FormData()
  for (const [name, value] of Object.entries(fields)) {
    if (value === undefined) continue
    if (name === 'file') {
      const file = value as { name?: string; content: string | Uint8Array }
      const blob = new Blob([file.content as never])
      if (file.name === undefined) form.append('file', blob, '')
      else form.append('file', blob, file.name)
    } else {
      form.append(name, String(value))
    }
  }
  return form
}
