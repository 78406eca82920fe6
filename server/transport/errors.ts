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

/** A 429, naming the budget that refused it (for the metrics; never sent: the spec sends no budget counters). */
export class RateLimitedError extends HttpError {
  constructor(readonly budget: string, seconds: number, message: string) {
    super(429, 'RATE_LIMITED', message, {}, { 'retry-after': String(seconds) })
  }
}

export function rateLimited(retryAfterSeconds: number, message = 'Rate limit reached; retry after the indicated number of seconds.',
  budget = 'unknown') {
  const seconds = Math.max(1, Math.ceil(retryAfterSeconds))
  return new RateLimitedError(budget, seconds, message)
}

const statusesWithRequestId = new Set([413, 414, 429, 500])

// The refusal each response was answered with, for what observes requests once they
// are answered (the metrics count 429s by budget and webhook refusals by code).
const refusals = new WeakMap<ServerResponse, HttpError>()

export function refusalOf(res: ServerResponse): HttpError | undefined {
  return refusals.get(res)
}

export function writeError(res: ServerResponse, error: HttpError, requestId: string): void {
  refusals.set(res, error)
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
