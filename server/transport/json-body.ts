// Request bodies: read with a byte cap as they arrive, decoded as strict UTF-8 and
// parsed as JSON whatever the Content-Type.
import type { IncomingMessage } from 'node:http'
import { HttpError, invalidBody } from './errors.ts'
import { findJsonFault, MAX_JSON_DEPTH, type JsonFaultKind } from '../core/json-clean.ts'

export const DEFAULT_BODY_LIMIT = 1024 * 1024

const tooLarge = (limitBytes: number) =>
  new HttpError(413, 'BODY_TOO_LARGE', `The request body exceeds ${limitBytes} bytes.`, { limitBytes }, { connection: 'close' })

export const requestTimeout = () =>
  new HttpError(408, 'REQUEST_TIMEOUT', 'The request did not arrive completely in time.', {}, { connection: 'close' })

/**
 * Emitted on a request whose headers and body did not arrive within the request
 * timeout (see createApp): a body still being read is refused with REQUEST_TIMEOUT.
 */
export const REQUEST_TIMED_OUT = Symbol('request timed out')

/**
 * Reads a body, refusing it as soon as it exceeds the cap (before reading at all
 * when Content-Length already does) or when the request timeout strikes first.
 */
export function readBody(req: IncomingMessage, limitBytes: number): Promise<Buffer> {
  const declared = Number(req.headers['content-length'])
  if (Number.isFinite(declared) && declared > limitBytes) return Promise.reject(tooLarge(limitBytes))
  // A client that asked to continue sends its body only now that it is wanted.
  ;(req as IncomingMessage & { acceptBody?: () => void }).acceptBody?.()
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
    const onTimeout = () => finish(requestTimeout())
    function finish(error: Error | null) {
      req.off('data', onData).off('end', onEnd).off('error', onError).off(REQUEST_TIMED_OUT, onTimeout)
      if (error) {
        // Stop reading: the connection closes after the refusal.
        req.pause()
        reject(error)
      } else {
        resolve(Buffer.concat(chunks, size))
      }
    }
    req.on('data', onData).on('end', onEnd).on('error', onError).on(REQUEST_TIMED_OUT, onTimeout)
  })
}

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false })


/** Parses a body; undefined for an empty one. */
export function parseJsonBody(raw: Buffer): unknown {
  if (raw.length === 0) return undefined
  let text: string
  try {
    text = utf8.decode(raw)
  } catch {
    throw invalidBody('The body is not valid UTF-8.', [{ path: '', message: 'invalid UTF-8' }])
  }
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch (error) {
    // The parser's own message quotes the body around the fault, which may hold a
    // secret (a cookie, a token): only where it failed is said.
    throw invalidBody('The body is not valid JSON.', [{ path: '', message: jsonFault(error as Error, text) }])
  }
  const fault = findJsonFault(value, { safeIntegers: true, text })
  if (fault) throw invalidBody(REFUSALS[fault.kind], [{ path: fault.path, message: fault.message }])
  return value
}

/** How deeply a body's arrays and objects may nest: the limit of every JSON body (server/core/json-clean.ts). */
export const MAX_BODY_DEPTH = MAX_JSON_DEPTH

// What JSON allows but the service does not (server/core/json-clean.ts), refused.
const REFUSALS: Record<JsonFaultKind, string> = {
  nul: 'NUL characters are not allowed.',
  surrogate: 'Unpaired surrogates are not allowed.',
  integer: 'Integers must be at most 2^53 - 1.',
  depth: `The body nests arrays and objects deeper than ${MAX_BODY_DEPTH} levels.`,
}

/** Where a body stops being JSON, without quoting it. */
function jsonFault(error: Error, text: string): string {
  const at = /position (\d+)/.exec(error.message)?.[1]
  if (at !== undefined) return `not JSON at character ${Number(at) + 1}`
  return /Unexpected end/.test(error.message) || text.trim() === '' ? 'not JSON: the body ends too early' : 'not JSON'
}
