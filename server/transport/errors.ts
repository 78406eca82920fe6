// The error envelope: {error, code, data}, plus requestId on 413, 414, 429 and 500.
import type { ServerResponse } from 'node:http'

export interface Issue {
  path: string
  message: string
}

export class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly data: Record<string, unknown> = {},
    readonly headers: Record<string, string> = {},
  ) {
    super(message)
  }
}

export const invalidBody = (message: string, issues: Issue[]) =>
  new HttpError(400, 'INVALID_BODY', message, { issues })

export const invalidQuery = (message: string, issues: Issue[]) =>
  new HttpError(400, 'INVALID_QUERY', message, { issues })

export function rateLimited(retryAfterSeconds: number, message = 'Rate limit reached; retry after the indicated number of seconds.') {
  const seconds = Math.max(1, Math.ceil(retryAfterSeconds))
  return new HttpError(429, 'RATE_LIMITED', message, {}, { 'retry-after': String(seconds) })
}

const statusesWithRequestId = new Set([413, 414, 429, 500])

export function writeError(res: ServerResponse, error: HttpError, requestId: string): void {
  const body: Record<string, unknown> = { error: error.message, code: error.code, data: error.data }
  if (statusesWithRequestId.has(error.status)) body.requestId = requestId
  const text = JSON.stringify(body)
  res.statusCode = error.status
  for (const [name, value] of Object.entries(error.headers)) res.setHeader(name, value)
  res.setHeader('content-type', 'application/json; charset=utf-8')
  res.setHeader('content-length', Buffer.byteLength(text))
  res.end(text)
}

export const internalError = () => new HttpError(500, 'INTERNAL_ERROR', 'Internal error; retry with backoff, quoting the request id.')
