// What the randomized security tests share: the seed and run count (from
// SECURITY_SEED and SECURITY_RUNS, printed so a failure can be replayed), the
// operations /openapi.json publishes, a raw HTTP client that sends exactly the bytes
// it is given, the error envelope check and a detector of leaked internals.
import { request as httpRequest } from 'node:http'
import type { Test } from 'tap'
import fc from 'fast-check'
import type { Sql } from '../../server/core/db/connection.ts'

type Json = Record<string, any>

/** The seed of this run: SECURITY_SEED when set (to replay a failure), else a fresh one. */
export function securitySeed(): number {
  const given = process.env.SECURITY_SEED
  if (given !== undefined && given !== '') {
    const seed = Number(given)
    if (!Number.isInteger(seed)) throw new Error(`SECURITY_SEED must be an integer, got ${given}`)
    return seed
  }
  return Math.floor(Math.random() * 2 ** 31)
}

/** How many cases a property tries: SECURITY_RUNS when set, else the file's bounded default. */
export function securityRuns(fallback: number): number {
  const given = Number(process.env.SECURITY_RUNS)
  return Number.isInteger(given) && given > 0 ? given : fallback
}

/**
 * Runs a property with a fixed seed. A failure is reported once, with the seed, the
 * shrunk counterexample and the command that replays it.
 */
export async function checkProperty<Ts extends [unknown, ...unknown[]]>(t: Test, name: string,
  property: fc.IAsyncPropertyWithHooks<Ts>, seed: number, numRuns: number): Promise<void> {
  const details = await fc.check(property, { seed, numRuns, endOnFailure: true })
  if (details.failed) {
    const replay = `SECURITY_SEED=${seed} SECURITY_RUNS=${numRuns}`
    const message = `${name}: failed with seed ${seed} (replay with ${replay}) after ${details.numRuns} runs\n` +
      `counterexample: ${fc.stringify(details.counterexample).slice(0, 3000)}\n` +
      `${details.errorInstance instanceof Error ? details.errorInstance.message : String(details.errorInstance)}`.slice(0, 6000)
    console.error(message)
    t.fail(message)
  } else {
    t.pass(`${name}: ${details.numRuns} runs with seed ${seed}`)
  }
}

export interface Operation {
  method: string
  /** The template as /openapi.json writes it, /api/v1/projects/{id}. */
  path: string
  operationId: string
  /** Path parameters in the order they appear. */
  params: string[]
  /** Query parameters: name, required. */
  query: { name: string; required: boolean; schema: Json }[]
  /** Declared request headers (lower-case names). */
  headers: string[]
  /** The JSON request body's schema, when the operation takes one. */
  body?: Json
  /** Statuses the operation declares. */
  statuses: Set<number>
  keyless: boolean
  session: boolean
  read: boolean
}

export function operationsOf(document: Json): Operation[] {
  const operations: Operation[] = []
  for (const [path, item] of Object.entries<Json>(document.paths)) {
    for (const [method, operation] of Object.entries<Json>(item)) {
      if (!operation?.responses) continue
      const parameters = (operation.parameters ?? []).filter((p: Json) => !p.$ref) as Json[]
      operations.push({
        method: method.toUpperCase(), path, operationId: operation.operationId,
        params: [...path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]!),
        query: parameters.filter((p) => p.in === 'query').map((p) => ({ name: p.name, required: Boolean(p.required), schema: p.schema ?? {} })),
        headers: parameters.filter((p) => p.in === 'header').map((p) => String(p.name).toLowerCase()),
        body: operation.requestBody?.content?.['application/json']?.schema,
        statuses: new Set(Object.keys(operation.responses).map(Number)),
        keyless: Array.isArray(operation.security) && operation.security.length === 0,
        session: Array.isArray(operation.security) && operation.security.some((s: Json) => 'session' in s),
        read: method === 'get',
      })
    }
  }
  return operations
}

/** The schema a $ref names, followed until it is no reference. */
export function deref(document: Json, schema: Json | undefined): Json {
  let current = schema ?? {}
  for (let hops = 0; current.$ref && hops < 20; hops++) {
    current = current.$ref.split('/').slice(1).reduce((at: Json, key: string) => at?.[key], document) ?? {}
  }
  return current
}

/** The template's pattern over a raw request path (segments as sent). */
export function templatePattern(template: string): RegExp {
  return new RegExp(`^${template.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\\?\{[^}]+\\?\}/g, '[^/?]+')}$`)
}

export interface RawResponse {
  status: number
  headers: Record<string, string | string[] | undefined>
  text: string
  body: unknown
}

/**
 * One request with exactly the path, headers and body bytes given: no URL
 * normalization (a `..` segment reaches the server as sent), no header rewriting.
 */
export function rawRequest(base: string, method: string, path: string, headers: Record<string, string>,
  body?: string | Buffer): Promise<RawResponse> {
  const url = new URL(base)
  // Node sends a GET's or DELETE's body with no framing unless told its length.
  const framed = body === undefined ? headers : { ...headers, 'content-length': String(Buffer.byteLength(body)) }
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: url.hostname, port: url.port, method, path, headers: framed, agent: false }, (res) => {
      const chunks: Buffer[] = []
      res.on('data', (chunk: Buffer) => chunks.push(chunk))
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8')
        let parsed: unknown
        try {
          parsed = text ? JSON.parse(text) : undefined
        } catch {
          parsed = undefined
        }
        resolve({ status: res.statusCode ?? 0, headers: res.headers, text, body: parsed })
      })
      res.on('error', reject)
    })
    req.on('error', reject)
    req.end(body)
  })
}

const ENVELOPE_KEYS = new Set(['error', 'code', 'data', 'requestId'])

/** Null when the body is the standard error envelope with a published code, else what is wrong. */
export function envelopeProblem(document: Json, body: unknown): string | null {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return 'the body is not a JSON object'
  const envelope = body as Json
  const codes: string[] = deref(document, { $ref: '#/components/schemas/ErrorCode' }).enum ?? []
  if (typeof envelope.error !== 'string' || envelope.error === '') return 'no error message'
  if (!codes.includes(envelope.code)) return `code ${JSON.stringify(envelope.code)} is not a published ErrorCode`
  if (typeof envelope.data !== 'object' || envelope.data === null || Array.isArray(envelope.data)) return 'no data object'
  const extra = Object.keys(envelope).filter((key) => !ENVELOPE_KEYS.has(key))
  if (extra.length) return `undeclared keys ${extra.join(', ')}`
  return null
}

/** What the database would leak by name: its tables, constraints and functions of the service's schemas. */
export async function internalNames(owner: Sql): Promise<string[]> {
  const rows = await owner<{ name: string }[]>`
    select c.relname as name from pg_class c join pg_namespace n on n.oid = c.relnamespace
     where n.nspname in ('app', 'api') and c.relkind in ('r', 'p', 'v', 'i', 'S')
    union select conname from pg_constraint k join pg_namespace n on n.oid = k.connamespace where n.nspname in ('app', 'api')
    union select proname from pg_proc p join pg_namespace n on n.oid = p.pronamespace where n.nspname in ('app', 'api')`
  // Only snake_case names: a one-word name (projects, handle) is also an ordinary
  // word of a response, while a name with an underscore is the schema's own.
  return rows.map((r) => r.name).filter((name) => name.includes('_'))
}

/** Every string constant the document publishes (enums, consts): legitimate values a body may hold. */
export function publishedConstants(document: Json): Set<string> {
  const found = new Set<string>()
  const walk = (value: unknown): void => {
    if (Array.isArray(value)) return value.forEach(walk)
    if (typeof value !== 'object' || value === null) return
    const node = value as Json
    if (Array.isArray(node.enum)) node.enum.forEach((e: unknown) => typeof e === 'string' && found.add(e))
    if (typeof node.const === 'string') found.add(node.const)
    Object.values(node).forEach(walk)
  }
  walk(document)
  return found
}

const LEAKS: [string, RegExp][] = [
  ['a stack frame', /\bat (?:async )?[\w$.<>[\]]+ \([^()\n]*:\d+:\d+\)|\bat (?:file:\/\/)?\/[\w./-]+:\d+:\d+/],
  ['a source file path', /(?:\/[\w.@-]+)+\.(?:ts|js|mjs|cjs|sql)(?::\d+)?\b|node_modules|file:\/\//],
  ['a JavaScript error name', /\b(?:TypeError|ReferenceError|RangeError|SyntaxError|AggregateError)\b/],
  ['a database word', /postgres|\bpg_[a-z]+|SQLSTATE|\bsqlstate\b|\brelation \\?"|\bcolumn \\?"|violates|duplicate key|\bplpgsql\b/i],
  ['a SQL state name', /\b(?:unique|foreign_key|check|not_null|exclusion)_violation\b|\b(?:invalid_text_representation|untranslatable_character|character_not_in_repertoire|numeric_value_out_of_range|undefined_function|undefined_table|undefined_column|insufficient_privilege|raise_exception|division_by_zero|datetime_field_overflow|string_data_right_truncation|invalid_parameter_value)\b/],
  ['a schema-qualified name', /\b(?:app|api)\.[a-z]+_[a-z_]+\b/],
  ['a validation library', /valibot|\bajv\b/i],
]

export interface InternalsDetector {
  /** Null when the text shows nothing internal once the request's own strings are set aside; else what it shows. */
  (text: string, echoes?: Iterable<string>): string | null
}

/**
 * Finds internals in a response body. What the request sent comes back legitimately
 * (a refused slug, a name echoed in data), so every sent string is set aside before
 * looking; published enum values are not internals either.
 */
export function internalsDetector(names: string[], constants: Set<string>): InternalsDetector {
  const named = names.filter((name) => !constants.has(name)).sort((a, b) => b.length - a.length)
  const byName = named.length ? new RegExp(`\\b(?:${named.map((n) => n.replace(/[.*+?^$()|[\]\\{}]/g, '\\$&')).join('|')})\\b`) : null
  return (text, echoes = []) => {
    let rest = text
    // Longest first, so a sent string holding a shorter sent string is removed whole;
    // both the raw string and its JSON-escaped form, as a body writes it.
    const sent = [...new Set([...echoes].filter((e) => e.length >= 3))]
      .flatMap((e) => [e, JSON.stringify(e).slice(1, -1)]).sort((a, b) => b.length - a.length)
    for (const echo of sent) rest = rest.split(echo).join('\u2400')
    for (const [label, pattern] of LEAKS) {
      const match = pattern.exec(rest)
      if (match) return `${label}: ${JSON.stringify(rest.slice(Math.max(0, match.index - 60), match.index + 80))}`
    }
    const match = byName?.exec(rest)
    if (match) return `the internal name ${match[0]}: ${JSON.stringify(rest.slice(Math.max(0, match.index - 60), match.index + 80))}`
    return null
  }
}

/** Strings found anywhere in a value (object keys included), for setting echoes aside. */
export function stringsOf(value: unknown, into: Set<string> = new Set()): Set<string> {
  if (typeof value === 'string') into.add(value)
  else if (Array.isArray(value)) value.forEach((v) => stringsOf(v, into))
  else if (typeof value === 'object' && value !== null) {
    for (const [key, v] of Object.entries(value)) {
      into.add(key)
      stringsOf(v, into)
    }
  }
  return into
}

/**
 * A body the schema accepts, as far as its shape goes: required members only, each
 * the simplest value of its type; a string member is asked of `named` first, so a
 * test can put its own ids where the schema wants an id.
 */
export function minimalValue(document: Json, schema: Json | undefined, named: (name: string) => unknown, name = '', depth = 0): unknown {
  const s = deref(document, schema)
  if (depth > 8) return null
  if ('const' in s) return s.const
  if (Array.isArray(s.enum) && s.enum.length) return s.enum[0]
  const branches = (s.anyOf ?? s.oneOf) as Json[] | undefined
  if (branches) {
    const usable = branches.map((b) => deref(document, b)).find((b) => b.type !== 'null') ?? branches[0]
    return minimalValue(document, usable, named, name, depth + 1)
  }
  if (s.allOf) return minimalValue(document, s.allOf[0], named, name, depth + 1)
  const type = Array.isArray(s.type) ? s.type.find((x: string) => x !== 'null') : s.type
  switch (type) {
    case 'object': {
      const out: Json = {}
      for (const key of (s.required ?? []) as string[]) out[key] = minimalValue(document, s.properties?.[key], named, key, depth + 1)
      return out
    }
    case 'array': {
      const count = s.minItems ?? 0
      return Array.from({ length: count }, () => minimalValue(document, s.items, named, name, depth + 1))
    }
    case 'integer':
    case 'number':
      return Math.max(1, s.minimum ?? 1, s.exclusiveMinimum !== undefined ? s.exclusiveMinimum + 1 : 1)
    case 'boolean':
      return true
    case 'null':
      return null
    default: {
      const chosen = named(name)
      if (chosen !== undefined) return chosen
      if (s.format === 'uuid') return '00000000-0000-4000-8000-000000000000'
      if (s.format === 'email') return 'probe@example.test'
      if (s.format === 'uri' || /url$/i.test(name)) return 'https://example.test/'
      const length = Math.max(s.minLength ?? 1, 5)
      return 'probe'.padEnd(Math.min(length, s.maxLength ?? length), 'x')
    }
  }
}
