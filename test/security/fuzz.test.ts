// Every operation /openapi.json publishes, fed hostile input generated from its own
// declaration: bodies of the wrong type, too deep, too long, with NUL characters,
// broken UTF-8 and odd unicode, numbers out of range, bad enum values, unknown and
// missing members, malformed JSON and wrong media types; hostile headers, path
// parameters and query strings. Whatever arrives, the answer is never a 5xx (unless
// the operation declares a 503 for a dependency this deployment lacks), every refusal
// is the published error envelope with a status the operation declares, and no body
// shows an internal (a stack, a file path, the database's words or names).
//
// Seeded: SECURITY_SEED replays a run, SECURITY_RUNS sets the cases per operation.
import t from 'tap'
import fc from 'fast-check'
import { world } from '../lib/world.ts'
import { signIn } from '../lib/session.ts'
import { responseChecker } from '../lib/openapi.ts'
import {
  checkProperty, deref, internalNames, internalsDetector, minimalValue, operationsOf, publishedConstants, rawRequest,
  securityRuns, securitySeed, stringsOf, templatePattern, type Operation,
} from '../lib/security.ts'

const seed = securitySeed()
const runsPerOperation = securityRuns(4)
t.comment(`security fuzz: seed ${seed}, ${runsPerOperation} runs per operation (replay with SECURITY_SEED=${seed})`)

// Budgets scaled up: the test sends many requests as one person and is about input, not rates.
const w = await world(t, { env: { RATE_LIMIT_SCALE: '10000' } })
const session = await signIn(w, 'olive@acme.test')
const key = w.keyOf('olive@acme.test')
const acmeId = w.seeded.organizations.acme!.id
const document = await (await fetch(`${w.service.url}/openapi.json`)).json() as Record<string, any>
const operations = operationsOf(document)
const checker = responseChecker(document)
const leaks = internalsDetector(await internalNames(w.service.db.owner), publishedConstants(document))

const NIL_ID = '00000000-0000-4000-8000-000000000000'
const nestedArrays = (depth: number) => '['.repeat(depth) + ']'.repeat(depth)
const nestedObjects = (depth: number) => '{"a":'.repeat(depth) + '1' + '}'.repeat(depth)

const hostileStrings = [
  '', ' ', '\u0000', 'a\u0000b', '\ud800', 'x\udfffy', '\u202e\u200b\u2066', '\ufeff', '\u{1F600}'.repeat(50), 'Ω≈ç√∫',
  "' or 1=1 --", '"; drop table app.projects; --', '../../etc/passwd', '%00', '${7*7}', '{{7*7}}', '<script>alert(1)</script>',
  '\\', 'null', 'true', '-1', '1e309', 'NaN', '2026-13-45', 'not-a-uuid', `${NIL_ID}x`, 'x'.repeat(300_000),
]
const hostileString = fc.oneof(fc.constantFrom(...hostileStrings), fc.string({ unit: 'binary', maxLength: 30 }))
const hostileNumber = fc.oneof(fc.constantFrom(-1, 0, -0, 1.5, 2 ** 31, 2 ** 53, 2 ** 53 + 2, 2 ** 64, -(2 ** 63), 1e308, -1e308, 8_640_000_000_000_001),
  fc.integer(), fc.double({ noNaN: true, noDefaultInfinity: true }))
const hostileValue: fc.Arbitrary<unknown> = fc.oneof(
  hostileString, hostileNumber, fc.constantFrom(null, true, false, [], {}, [[[]]], { __proto__: { admin: true } }, { constructor: { prototype: 1 } }),
  fc.array(hostileString, { maxLength: 3 }), fc.dictionary(fc.string({ maxLength: 8 }), hostileString, { maxKeys: 3 }),
  fc.constantFrom(...Array.from({ length: 30 }, (_, i) => Object.fromEntries(Array.from({ length: i * 40 }, (_, j) => [`k${j}`, j])))),
)

// Bodies as raw bytes: what JSON.stringify cannot write.
const rawBodies: (string | Buffer)[] = [
  '{', '{"a":', 'nul', '[', '{"a":1}garbage', '{"a":1,"a":2}', '\ufeff{}', '"\\ud800"', '{"name":"\\u0000"}', '{"name":"\\udc00"}',
  '', ' ', '1e999', '{"a":1e999}', '{"__proto__":{"admin":true}}', nestedArrays(200), nestedArrays(20_000), nestedObjects(5_000),
  Buffer.from([0xff, 0xfe, 0x7b, 0x7d]), Buffer.from('{"name":"\xff\xfe"}', 'latin1'), Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xc0, 0xaf, 0x22, 0x7d]),
  Buffer.from('{"name":"\ud800"}', 'utf16le'), Buffer.from([0x00, 0x00, 0x00]),
]
const contentTypes = ['application/json', 'application/json; charset=utf-8', 'text/plain', 'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=zz', 'application/json; charset=utf-16', 'application/json; charset=latin1', '*/*',
  'application/json, text/html', 'application/jsonx', 'application/vnd.api+json', ' ', 'é']

const hostileSegments = ['..', '../..', '%2e%2e', '..%2F..%2Fme', '%00', 'a%00b', '%ED%A0%80', '%FF', '%', '%zz', '%2F', '__',
  'x'.repeat(10_000), encodeURIComponent("' or 1=1--"), encodeURIComponent('名前'), '%20', `${NIL_ID}x`, '-1', '0', '1e309',
  encodeURIComponent('\u202e'), '.', encodeURIComponent('../../etc/passwd'), encodeURIComponent('<script>')]

const hostileQueries = ['limit=1&limit=2', 'a[]=1&a[]=2', 'limit=-1', 'limit=1e309', 'limit=abc', 'limit=', 'cursor=',
  'cursor=garbage', 'cursor=%00', 'orgId=%00', 'orgId=not-an-id', 'zzz=1', '%00=1', '=1', '&&&', 'limit', `cursor=${'x'.repeat(5_000)}`,
  'projectId=%ED%A0%80', 'offset=-5&cursor=x', 'archived=maybe', 'status[]=done', 'limit=1%00', '__proto__[admin]=1',
  `orgId=${acmeId}&orgId=${acmeId}`, 'q=%FF%FE']

const authorizations = [`Bearer ${key}`, undefined, 'Bearer', 'Bearer  ', 'Basic dXNlcjpwYXNz', `Bearer ${key} extra`, `bearer ${key}`,
  `Bearer ${'x'.repeat(8_000)}`, 'Token abc', `Bearer ${key}\xe9`, 'Bearer \t', `Bearer ${key.slice(0, -1)}`]
const slugs = ['acme', undefined, '', ' ', 'ACME', 'globex', 'nope', 'a'.repeat(3_000), '../', "' or 1=1", '\xe9', '%00']
const headerValues = ['', ' ', 'x'.repeat(300), '\xe9\xff', '../', "' or 1=1", 'ok-key-1', 'x'.repeat(20_000)]

interface Sent {
  method: string
  path: string
  headers: Record<string, string>
  body?: string | Buffer
  /** Whether the path still has the operation's shape (a hostile segment may split it). */
  shaped: boolean
  echoes: Set<string>
}

/** A value for a path parameter that names something real where the test has it. */
function plainSegment(operation: Operation, name: string): string {
  if (name === 'id' && operation.path.startsWith('/api/v1/projects/')) return w.alpha
  if (name === 'slug' || name === 'name' || name === 'key' || name === 'token') return 'probe'
  if (name === 'notificationId') return `${acmeId}:inbox:${NIL_ID}`
  return NIL_ID
}

function requestArbitrary(operation: Operation): fc.Arbitrary<Sent> {
  const bodySchema = operation.body ? deref(document, operation.body) : undefined
  const base = bodySchema ? minimalValue(document, bodySchema, () => undefined) : undefined
  const properties = Object.keys(bodySchema?.properties ?? {})
  const required: string[] = bodySchema?.required ?? []

  const segment = (name: string) => fc.oneof({ weight: 3, arbitrary: fc.constant(plainSegment(operation, name)) },
    { weight: 2, arbitrary: fc.constantFrom(...hostileSegments) })
  const path = fc.tuple(...operation.params.map(segment) as [fc.Arbitrary<string>]).map((values) => {
    let at = 0
    return operation.path.replace(/\{[^}]+\}/g, () => values[at++]!)
  })
  const plainQuery = [
    ...operation.query.filter((q) => q.required).map((q) =>
      `${q.name}=${encodeURIComponent(q.name === 'orgId' ? acmeId : String(minimalValue(document, q.schema, () => undefined, q.name)))}`),
    ...(operation.session && !operation.query.some((q) => q.name === 'orgId' && q.required) ? [`orgId=${acmeId}`] : []),
  ].join('&')
  const query = fc.oneof({ weight: 3, arbitrary: fc.constant(plainQuery) },
    { weight: 2, arbitrary: fc.constantFrom(...hostileQueries).map((hostile) => plainQuery ? `${plainQuery}&${hostile}` : hostile) },
    { weight: 1, arbitrary: fc.constantFrom(...hostileQueries) })
  type Body = { kind: 'json'; value: unknown } | { kind: 'raw'; bytes: string | Buffer } | { kind: 'none' }
  const json = (value: unknown): Body => ({ kind: 'json', value })
  const body: fc.Arbitrary<Body> = fc.oneof(
    { weight: 2, arbitrary: fc.constant(base === undefined ? { kind: 'none' } as Body : json(base)) },
    { weight: 2, arbitrary: hostileValue.map(json) },
    { weight: 3, arbitrary: fc.tuple(properties.length ? fc.constantFrom(...properties) : fc.string({ maxLength: 12 }), hostileValue)
      .map(([name, value]) => json({ ...(typeof base === 'object' && base !== null ? base : {}), [name]: value })) },
    { weight: 1, arbitrary: fc.tuple(fc.string({ minLength: 1, maxLength: 12 }), hostileValue)
      .map(([name, value]) => json({ ...(typeof base === 'object' && base !== null ? base : {}), [`extra${name}`]: value })) },
    { weight: 1, arbitrary: (required.length ? fc.constantFrom(...required) : fc.constant('')).map((missing) => {
      const copy = { ...(typeof base === 'object' && base !== null ? base : {}) } as Record<string, unknown>
      delete copy[missing]
      return json(copy)
    }) },
    { weight: 2, arbitrary: fc.constantFrom(...rawBodies).map((bytes): Body => ({ kind: 'raw', bytes })) },
    { weight: 1, arbitrary: fc.constant({ kind: 'none' } as Body) },
  )
  const headers = fc.record({
    authorization: fc.oneof({ weight: 4, arbitrary: fc.constant(authorizations[0]) }, { weight: 1, arbitrary: fc.constantFrom(...authorizations) }),
    slug: fc.oneof({ weight: 4, arbitrary: fc.constant<string | undefined>('acme') }, { weight: 1, arbitrary: fc.constantFrom(...slugs) }),
    contentType: fc.oneof({ weight: 4, arbitrary: fc.constant('application/json') }, { weight: 1, arbitrary: fc.constantFrom(...contentTypes, undefined) }),
    extra: fc.option(fc.tuple(fc.constantFrom('idempotency-key', 'x-request-id', 'x-api-key', 'cookie', 'origin', 'accept',
      'if-none-match', 'x-forwarded-for', 'content-encoding', 'x-webhook-delivery-id'), fc.constantFrom(...headerValues)), { freq: 2 }),
  })

  return fc.record({ path, query, body, headers }).map(({ path, query, body, headers }): Sent => {
    const sent: Record<string, string> = {}
    if (operation.session) {
      sent.cookie = session.cookie
      sent.origin = w.service.url
    } else if (!operation.keyless) {
      if (headers.authorization !== undefined) sent.authorization = headers.authorization
      if (headers.slug !== undefined) sent['x-organization-slug'] = headers.slug
    }
    let bytes: string | Buffer | undefined
    if (body.kind === 'json') bytes = JSON.stringify(body.value)
    else if (body.kind === 'raw') bytes = body.bytes
    if (bytes !== undefined && headers.contentType !== undefined) sent['content-type'] = headers.contentType
    if (headers.extra) sent[headers.extra[0]] = headers.extra[1]
    const fullPath = query ? `${path}?${query}` : path
    const echoes = new Set<string>()
    for (const part of [...path.split('/'), ...query.split(/[&=]/)]) {
      echoes.add(part)
      try {
        echoes.add(decodeURIComponent(part))
      } catch {
        // Not percent-decodable: sent and echoed as it is.
      }
    }
    Object.values(sent).forEach((v) => echoes.add(v))
    if (body.kind === 'json') stringsOf(body.value, echoes)
    if (typeof bytes === 'string') echoes.add(bytes)
    if (Buffer.isBuffer(bytes)) echoes.add(bytes.toString('utf8'))
    return { method: operation.method, path: fullPath, headers: sent, body: bytes, shaped: templatePattern(operation.path).test(path), echoes }
  })
}

/** Null when the answer keeps every promise; else what it broke. */
function verdict(operation: Operation, sent: Sent, status: number, contentType: string, text: string, body: unknown): string | null {
  if (status >= 500 && !(status === 503 && operation.statuses.has(503))) return `answered ${status}`
  const success = status >= 200 && status < 300
  if (!success && status !== 304) {
    // A hostile segment can make the path another route's or none at all: then the
    // router's own refusals are the right answer.
    const routed = sent.shaped ? operation.statuses.has(status) : [404, 405, 414].includes(status) || operation.statuses.has(status)
    if (!routed) return `answered ${status}, which ${operation.operationId} does not declare`
    if (!/\bjson\b/.test(contentType) || body === undefined) return `answered ${status} without a JSON error body: ${text.slice(0, 200)}`
  }
  try {
    checker.check(sent.method, sent.path, status, contentType, body)
  } catch (error) {
    return (error as Error).message
  }
  // A page or script the service serves on success (the reference at /docs) names its
  // own asset files; what is looked at for internals is JSON and every refusal.
  if (success && !/\bjson\b/.test(contentType)) return null
  // The published document describes the service in prose (its text search names
  // PostgreSQL's configurations): it is the contract, not a leak.
  if (success && operation.path === '/openapi.json') return null
  return leaks(text, sent.echoes)
}

t.test('hostile input to every operation: no 5xx, the envelope on every refusal, no internals', async (t) => {
  t.ok(operations.length > 100, `the document publishes ${operations.length} operations`)
  const statuses = new Map<number, number>()
  let index = 0
  for (const operation of operations) {
    const operationSeed = seed + index++
    await checkProperty(t, `${operation.method} ${operation.path}`, fc.asyncProperty(requestArbitrary(operation), async (sent) => {
      const res = await rawRequest(w.service.url, sent.method, sent.path, sent.headers, sent.body)
      statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1)
      const problem = verdict(operation, sent, res.status, String(res.headers['content-type'] ?? ''), res.text, res.body)
      if (problem) {
        throw new Error(`${sent.method} ${sent.path.slice(0, 300)} ${JSON.stringify(sent.headers).slice(0, 300)} ` +
          `${String(sent.body ?? '').slice(0, 300)}\n→ ${problem}\n${res.text.slice(0, 500)}`)
      }
    }), operationSeed, runsPerOperation)
  }
  t.comment(`statuses seen: ${JSON.stringify(Object.fromEntries([...statuses].sort((a, b) => a[0] - b[0])))}`)
})

t.test('the internals detector sees leaks and lets echoed input pass', async (t) => {
  const envelope = (error: string, data: object = {}) => JSON.stringify({ error, code: 'INVALID_BODY', data })
  t.match(leaks(envelope('Internal: TypeError: x is undefined\n    at handle (/srv/server/app.ts:12:3)')), /stack|JavaScript|path/)
  t.match(leaks(envelope('duplicate key value violates unique constraint "projects_pkey"')), /database/)
  t.match(leaks(envelope('null value in column "name" of relation "projects"')), /database/)
  t.match(leaks(envelope('function api.project_update(jsonb) does not exist')), /schema-qualified|internal name/)
  t.match(leaks(envelope('failed: unique_violation')), /SQL state/)
  t.match(leaks(envelope('Invalid type: Expected string (valibot)')), /validation library/)
  t.match(leaks(envelope('refused by task_comments_pkey')), /internal name/)
  t.equal(leaks(envelope('No skill of that slug.', { slug: 'postgres_at /x.ts' }), ['postgres_at /x.ts']), null,
    'what the request sent is set aside')
  t.equal(leaks(envelope('Invalid body at "status": must be one of backlog, in_progress, in_review, done, cancelled')), null,
    'published enum values are not internals')
  t.equal(leaks(JSON.stringify({ projects: [{ id: NIL_ID, name: 'Alpha' }], isDone: true, continueCursor: '' })), null)
})
