import { randomUUID } from 'node:crypto'

const acceptable = /^[A-Za-z0-9_=-]{1,255}$/

/** The caller's X-Request-Id when it is acceptable, else a generated one. */
export function requestIdFor(header: string | string[] | undefined): string {
  const value = Array.isArray(header) ? header[0] : header
  return value !== undefined && acceptable.test(value) ? value : randomUUID()
}
