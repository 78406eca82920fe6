// Query strings: unknown, repeated or blank parameters are refused on reads, and
// writes take none at all, except a write that declares its query (the app's session
// routes name their organization with ?orgId=, on writes too).
import { invalidQuery } from './errors.ts'

export function parseQuery(search: string, method: string, writeDeclaresQuery = false): Record<string, string> {
  const params = new URLSearchParams(search)
  const query: Record<string, string> = {}
  const seen = new Set<string>()
  for (const [name, value] of params) {
    if (method !== 'GET' && method !== 'HEAD' && !writeDeclaresQuery) {
      throw invalidQuery('Writes take no query parameters.', [{ path: name, message: 'not allowed on a write' }])
    }
    if (seen.has(name)) throw invalidQuery(`Query parameter "${name}" is repeated.`, [{ path: name, message: 'repeated' }])
    if (value.trim() === '') throw invalidQuery(`Query parameter "${name}" is blank.`, [{ path: name, message: 'blank' }])
    if (value.includes('\u0000') || !value.isWellFormed()) {
      throw invalidQuery(`Query parameter "${name}" holds a NUL character or an unpaired surrogate.`, [{ path: name, message: 'invalid characters' }])
    }
    seen.add(name)
    query[name] = value
  }
  return query
}
