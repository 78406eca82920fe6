// The internal services' HTTP basics (indexing, crawler): the error envelope {error, code, data}, refusals
// raised in SQL (app.fail, SQLSTATE TL000) turned into it, bearer tokens compared in
// constant time, and JSON bodies read with a byte cap and checked with valibot.
import { createHash, timingSafeEqual } from 'node:crypto'
import type { IncomingMessage, ServerResponse } from 'node:http'
import * as v from 'valibot'
import { findJsonFault } from '../json-clean.ts'

export interface Issue {
  path: string
  message: string
}

/** A refusal with its status, code and data: written as the envelope, never with a stack. */
export class ServiceError extends Error {
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

export const invalidBody = (message: string, issues: Issue[]) => new ServiceError(400, 'INVALID_BODY', message, { issues })
export const unauthorized = () =>
  new ServiceError(401, 'UNAUTHORIZED', 'Send Authorization: Bearer <token>.', {}, { 'www-authenticate': 'Bearer' })
export const tooLarge = (limitBytes: number) =>
  new ServiceError(413, 'BODY_TOO_LARGE', `The request body exceeds ${limitBytes} bytes.`, { limitBytes }, { connection: 'close' })
export const internalError = () => new ServiceError(500, 'INTERNAL_ERROR', 'Internal error; retry with backoff.')

/**
 * A refusal raised in SQL with app.fail(code, status, message, data) arrives as a
 * PostgreSQL error of SQLSTATE TL000 whose detail holds {code, status, data}; any
 * other error is not a refusal (null).
 */
export function fromDatabase(error: unknown): ServiceError | null {
  const failure = error as { code?: unknown; detail?: unknown; message?: unknown }
  if (failure?.code !== 'TL000' || typeof failure.detail !== 'string') return null
  try {
    const detail = JSON.parse(failure.detail) as { code?: unknown; status?: unknown; data?: unknown }
    if (typeof detail.code !== 'string' || typeof detail.status !== 'number') return null
    const data = detail.data && typeof detail.data === 'object' && !Array.isArray(detail.data) ? detail.data as Record<string, unknown> : {}
    return new ServiceError(detail.status, detail.code, String(failure.message ?? detail.code), data)
  } catch {
    return null
  }
}

export function writeJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  writeJsonText(res, status, JSON.stringify(body), headers)
}

/** An answer already written as JSON (by PostgreSQL, say). */
export function writeJsonText(res: ServerResponse, status: number, text: string, headers: Record<string, string> = {}): void {
  res.statusCode = status
  for (const [name, value] of Object.entries(headers)) res.setHeader(name, value)
  res.setHeader('content-type', 'application/json; charset=utf-8')
  res.setHeader('content-length', Buffer.byteLength(text))
  res.setHeader('cache-control', 'no-store')
  res.end(text)
}

export function writeError(res: ServerResponse, error: ServiceError): void {
  writeJson(res, error.status, { error: error.message, code: error.code, data: error.data }, error.headers)
}

const digest = (value: string) => createHash('sha256').update(value).digest()

/**
 * Whether the Authorization header carries exactly `Bearer <token>`. Both sides are
 * hashed first, so the comparison takes the same time whatever the lengths.
 */
export function bearerMatches(header: string | undefined, token: string): boolean {
  const match = /^Bearer ([^\s].*)$/i.exec(header ?? '')
  const sent = match?.[1] ?? ''
  // Compared even when no token was sent, so a missing header costs the same.
  return timingSafeEqual(digest(sent), digest(token)) && match !== null
}

/** JSON bodies of the services' operations: the largest a list of 1000 ids needs and then some. */
export const JSON_BODY_LIMIT = 1024 * 1024

/** Reads a body with a cap, refusing it as soon as it exceeds the cap (before reading when Content-Length already does). */
export function readBody(req: IncomingMessage, limitBytes: number): Promise<Buffer> {
  const declared = Number(req.headers['content-length'])
  if (Number.isFinite(declared) && declared > limitBytes) return Promise.reject(tooLarge(limitBytes))
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    let size = 0
    const onData = (chunk: Buffer) => {
      size += chunk.length
      if (size > limitBytes) finish(tooLarge(limitBytes))
      else chunks.push(chunk)
    }
    const onEnd = () => finish(null)
    const onError = (error: Error) => finish(error)
    function finish(error: Error | null) {
      req.off('data', onData).off('end', onEnd).off('error', onError)
      if (error) {
        req.pause()
        reject(error)
      } else {
        resolve(Buffer.concat(chunks, size))
      }
    }
    req.on('data', onData).on('end', onEnd).on('error', onError)
  })
}

const utf8 = new TextDecoder('utf-8', { fatal: true })

/** A JSON body: strict UTF-8, valid JSON, no NUL character or unpaired surrogate anywhere (PostgreSQL text holds neither). */
export function parseJson(raw: Buffer): unknown {
  let text: string
  try {
    text = utf8.decode(raw)
  } catch {
    throw invalidBody('The body is not valid UTF-8.', [{ path: '', message: 'invalid UTF-8' }])
  }
  if (text.trim() === '') throw invalidBody('The body is empty; send a JSON object.', [{ path: '', message: 'a JSON object is required' }])
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch (error) {
    throw invalidBody('The body is not valid JSON.', [{ path: '', message: (error as Error).message }])
  }
  const bad = badText(value, text)
  if (bad) throw invalidBody('The body holds a value the service cannot store.', [bad])
  return value
}

/**
 * The first value PostgreSQL or the serializers on the way could not take: a string
 * or key with a NUL character or an unpaired surrogate, or nesting deeper than
 * MAX_JSON_DEPTH. Given the text it was parsed from, strings are looked at only when
 * that text could carry such a character (server/core/json-clean.ts).
 */
export function badText(root: unknown, text?: string): Issue | null {
  const fault = findJsonFault(root, { safeIntegers: false, text })
  return fault && { path: fault.path, message: fault.message }
}

export function issuesOf(issues: readonly v.BaseIssue<unknown>[]): Issue[] {
  return issues.map((issue) => {
    const path = v.getDotPath(issue) ?? ''
    // valibot reports an unknown key of a strict object at the key's own path.
    if (issue.kind === 'schema' && issue.type === 'strict_object' && issue.expected === 'never') {
      return { path, message: `unknown key "${path.split('.').pop()}"` }
    }
    return { path, message: issue.message }
  })
}

/** Reads, parses and checks a JSON body against a valibot schema; every problem is listed with its path. */
export async function jsonBody<S extends v.GenericSchema>(req: IncomingMessage, schema: S): Promise<v.InferOutput<S>> {
  const value = parseJson(await readBody(req, JSON_BODY_LIMIT))
  // valibot's object schemas would take an array as an object of its indexes.
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw invalidBody('The body must be a JSON object.', [{ path: '', message: 'must be a JSON object' }])
  }
  const result = v.safeParse(schema, value, { abortEarly: false })
  if (!result.success) throw invalidBody('The body does not have the expected shape.', issuesOf(result.issues))
  return result.output
}
