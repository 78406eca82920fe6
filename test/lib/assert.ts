// Assertions shared by the HTTP tests.
import type { Test } from 'tap'
import type { Response } from './service.ts'
import type { RawResponse } from './raw.ts'

export type AnyResponse = Response | RawResponse

/** A header of a fetched or a raw response. */
export function header(res: AnyResponse, name: string): string | null {
  return res.headers instanceof Headers ? res.headers.get(name) : (res.headers[name.toLowerCase()] ?? null)
}

/** The JSON body of a fetched or a raw response; undefined when it is not JSON. */
export function jsonOf(res: AnyResponse): any {
  if ('body' in res && !Buffer.isBuffer(res.body)) return res.body
  try {
    return JSON.parse(res.text)
  } catch {
    return undefined
  }
}

/**
 * A coded refusal: its status and code in the {error, code, data} envelope, sent as
 * JSON, with requestId where the spec wants it (413, 414, 429, 500). Returns the body.
 */
export function refused(t: Test, res: AnyResponse, status: number, code: string, label: string = code): any {
  const body = jsonOf(res)
  t.equal(res.status, status, `${label}: status ${status}`)
  t.equal(body?.code, code, `${label}: code ${code} (${JSON.stringify(body)?.slice(0, 300)})`)
  t.match(header(res, 'content-type') ?? '', /^application\/json/, `${label}: JSON`)
  t.type(body?.error, 'string', `${label}: error message`)
  t.ok(body?.data !== null && typeof body?.data === 'object' && !Array.isArray(body?.data), `${label}: data object`)
  if ([413, 414, 429, 500].includes(status)) {
    t.equal(body?.requestId, header(res, 'x-request-id'), `${label}: requestId in the body, the X-Request-Id sent back`)
  }
  return body
}
