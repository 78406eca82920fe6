// A request's input: path parameters, query and JSON body, each checked against the
// route's declared shape.
import type { IncomingMessage } from 'node:http'
import { HttpError, invalidBody, invalidQuery, type Issue } from './errors.ts'
import { DEFAULT_BODY_LIMIT, parseJsonBody, readBody } from './json-body.ts'
import { parseQuery } from './query.ts'
import { check } from './validation.ts'
import type { Input, Route } from '../routes/route.ts'

export type InputResult = { ok: true; value: Input } | { ok: false; error: HttpError }

export async function readInput(route: Route, req: IncomingMessage & { params?: Record<string, string> }): Promise<InputResult> {
  try {
    const url = req.url ?? '/'
    const queryAt = url.indexOf('?')
    const rawQuery = parseQuery(queryAt === -1 ? '' : url.slice(queryAt + 1), req.method ?? 'GET', route.query !== undefined)

    const params = route.params ? check(route.params, req.params ?? {}) : { ok: true as const, value: {} }
    // A malformed identifier cannot name anything the caller may see.
    if (!params.ok) return { ok: false, error: new HttpError(404, 'NOT_FOUND', 'Not found.') }

    let query: Record<string, unknown> = {}
    if (route.query) {
      const checked = check(route.query, rawQuery)
      if (!checked.ok) return { ok: false, error: invalidQuery(describe('query', checked.issues), checked.issues) }
      query = checked.value as Record<string, unknown>
    } else {
      const [name] = Object.keys(rawQuery)
      if (name !== undefined) {
        return { ok: false, error: invalidQuery(`Unknown query parameter "${name}".`, [{ path: name, message: 'unknown parameter' }]) }
      }
    }

    let body: unknown
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      const raw = await readBody(req, route.bodyLimit ?? DEFAULT_BODY_LIMIT)
      const unparsed = route.kind === 'keyless' && route.rawBody === true
      const parsed = unparsed ? undefined : parseJsonBody(raw)
      if (unparsed) {
        body = raw
      } else if (route.body) {
        const checked = check(route.body, parsed === undefined ? {} : parsed)
        if (!checked.ok) return { ok: false, error: invalidBody(describe('body', checked.issues), checked.issues) }
        body = checked.value
      } else if (parsed !== undefined) {
        return { ok: false, error: invalidBody('This operation takes no body.', [{ path: '', message: 'unexpected body' }]) }
      }
    }
    let headers: Record<string, unknown> = {}
    if (route.headers) {
      const checked = check(route.headers, req.headers)
      if (!checked.ok) {
        const first = checked.issues[0]!
        return { ok: false, error: new HttpError(400, 'INVALID_HEADER', `Invalid header ${first.path}: ${first.message}`, { issues: checked.issues }) }
      }
      headers = checked.value as Record<string, unknown>
    }
    return { ok: true, value: { params: params.value as Record<string, unknown>, query, body, headers } }
  } catch (error) {
    // Shape refusals wait for authentication; size and time refusals do not.
    if (error instanceof HttpError && error.status === 400) return { ok: false, error }
    throw error
  }
}

function describe(where: 'query' | 'body', issues: Issue[]): string {
  const first = issues[0]
  if (!first) return `Invalid ${where}.`
  return first.path ? `Invalid ${where} at "${first.path}": ${first.message}` : `Invalid ${where}: ${first.message}`
}
