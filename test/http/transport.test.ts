// The transport rules every route shares, each provoked over a real socket: request
// ids and the version header, query and body rules, size caps, parser refusals and
// the request timeout, verbs (HEAD, OPTIONS, 405), trailing slashes, long URIs,
// ETags and revalidation, compression, and the error envelope.
import t, { type Test } from 'tap'
import { gunzipSync } from 'node:zlib'
import { decompress } from 'zstd-napi'
import type { LogEntry, Response, TestService } from '../lib/service.ts'
import { project, world } from '../lib/world.ts'
import { refused, header, jsonOf, type AnyResponse } from '../lib/assert.ts'
import { rawExchange, type RawOptions, type RawResponse } from '../lib/raw.ts'

const MiB = 1024 * 1024
const REQUEST_ID = /^[A-Za-z0-9_=-]{1,255}$/

// Projects named so that they sort in creation order.
const numbered = (count: number) =>
  Array.from({ length: count }, (_, i) => project(`Seeded project number ${String(i).padStart(2, '0')}`))

/** A request as bytes: Host and, unless given, Connection: close and the body's Content-Length. */
function rawRequest(method: string, path: string, headers: Record<string, string> = {}, body?: string | Buffer): Buffer {
  const names = new Set(Object.keys(headers).map((h) => h.toLowerCase()))
  const lines = [`${method} ${path} HTTP/1.1`, 'Host: 127.0.0.1']
  if (!names.has('connection')) lines.push('Connection: close')
  if (body !== undefined && !names.has('content-length') && !names.has('transfer-encoding')) {
    lines.push(`Content-Length: ${Buffer.byteLength(body)}`)
  }
  for (const [name, value] of Object.entries(headers)) lines.push(`${name}: ${value}`)
  const head = Buffer.from(lines.join('\r\n') + '\r\n\r\n', 'latin1')
  return body === undefined ? head : Buffer.concat([head, Buffer.from(body)])
}

function raw(service: TestService, method: string, path: string, headers: Record<string, string> = {}, body?: string | Buffer, options?: RawOptions) {
  return rawExchange(service.url, rawRequest(method, path, headers, body), options)
}

const bearer = (key: string) => ({ authorization: `Bearer ${key}` })

const allowOf = (res: AnyResponse) => (header(res, 'allow') ?? '').split(',').map((m) => m.trim()).filter(Boolean).sort()

async function projectNames(service: TestService, key: string): Promise<string[]> {
  const res = await service.request('GET', '/api/v1/projects?limit=100', { key })
  return res.body.projects.map((p: { name: string }) => p.name)
}

// ---------------------------------------------------------------------------------
// Request ids and the version header

t.test('X-Request-Id, on reads of /me', async (t) => {
  const { service, olive: { key } } = await world(t, { projects: [] })
  const longest = 'aZ09_-='.repeat(40).slice(0, 255)

  t.test('an X-Request-Id of up to 255 letters, digits, _, - and = is kept', async (t) => {
    t.equal(longest.length, 255)
    const kept = await service.request('GET', '/api/v1/me', { key, headers: { 'x-request-id': longest } })
    t.equal(kept.status, 200)
    t.equal(kept.headers.get('x-request-id'), longest, '255 acceptable characters are kept')

    const single = await service.request('GET', '/api/v1/me', { key, headers: { 'x-request-id': '=' } })
    t.equal(single.headers.get('x-request-id'), '=', 'one acceptable character is kept')
  })

  t.test('any other X-Request-Id is replaced by an acceptable generated one', async (t) => {
    for (const [label, sent] of [
      ['256 characters', longest + 'a'],
      ['a dot', 'abc.def'],
      ['a slash', 'abc/def'],
      ['a space', 'abc def'],
      ['a colon', 'abc:def'],
      ['non-ASCII letters', 'r\u00e9sum\u00e9'],
    ] as const) {
      const res = await service.request('GET', '/api/v1/me', { key, headers: { 'x-request-id': sent } })
      t.equal(res.status, 200, `${label}: the request is served`)
      const replaced = res.headers.get('x-request-id')
      t.not(replaced, sent, `${label}: replaced`)
      t.match(replaced ?? '', REQUEST_ID, `${label}: replaced by an acceptable generated id`)
    }
  })

  t.test('without an X-Request-Id, a fresh one is generated for each request', async (t) => {
    const a = await service.request('GET', '/api/v1/me', { key })
    const b = await service.request('GET', '/api/v1/me', { key })
    t.match(a.headers.get('x-request-id') ?? '', REQUEST_ID, 'generated when none is sent')
    t.not(a.headers.get('x-request-id'), b.headers.get('x-request-id'), 'generated ids differ')
  })
})

t.test('X-Request-Id is echoed on every answer: 200, 204, 400, 401, 404, 405, 413, 414 and health endpoints', async (t) => {
  const { service, olive: { key } } = await world(t, { projects: [] })
  const cases: [string, number, (id: string) => Promise<AnyResponse>][] = [
    ['GET /api/v1/me', 200, (id) => service.request('GET', '/api/v1/me', { key, headers: { 'x-request-id': id } })],
    ['OPTIONS', 204, (id) => service.request('OPTIONS', '/api/v1/me', { headers: { 'x-request-id': id } })],
    ['bad query', 400, (id) => service.request('GET', '/api/v1/me?x=1', { key, headers: { 'x-request-id': id } })],
    ['no key', 401, (id) => service.request('GET', '/api/v1/me', { headers: { 'x-request-id': id } })],
    ['unknown route', 404, (id) => service.request('GET', '/api/v1/nothing-here', { key, headers: { 'x-request-id': id } })],
    ['unknown keyless route', 404, (id) => service.request('GET', '/nothing-here', { headers: { 'x-request-id': id } })],
    ['PUT', 405, (id) => service.request('PUT', '/api/v1/projects', { key, body: {}, headers: { 'x-request-id': id } })],
    ['oversized body', 413, (id) => raw(service, 'POST', '/api/v1/projects', { ...bearer(key), 'x-request-id': id, 'content-length': String(2 * MiB) })],
    ['long URI', 414, (id) => service.request('GET', `/api/v1/me?x=${'a'.repeat(9000)}`, { key, headers: { 'x-request-id': id } })],
    ['/health', 200, (id) => service.request('GET', '/health', { headers: { 'x-request-id': id } })],
    ['HEAD /health', 200, (id) => service.request('HEAD', '/health', { headers: { 'x-request-id': id } })],
    ['/api/health', 200, (id) => service.request('GET', '/api/health', { headers: { 'x-request-id': id } })],
    ['/status', 200, (id) => service.request('GET', '/status', { headers: { 'x-request-id': id } })],
    ['/status.json', 200, (id) => service.request('GET', '/status.json', { headers: { 'x-request-id': id } })],
  ]
  for (const [i, [label, status, send]] of cases.entries()) {
    const id = `echo-${i}_${status}=`
    const res = await send(id)
    t.equal(res.status, status, `${label}: ${status}`)
    t.equal(header(res, 'x-request-id'), id, `${label}: X-Request-Id echoed`)
  }
})

t.test('X-Service-Api-Version', async (t) => {
  const { service, olive: { key } } = await world(t, { projects: [] })

  t.test('every /api/v1 answer carries one X-Service-Api-Version value, whatever its status', async (t) => {
    const present: [string, () => Promise<AnyResponse>, number][] = [
      ['200', () => service.request('GET', '/api/v1/me', { key }), 200],
      ['201', () => service.request('POST', '/api/v1/projects', { key, body: { name: 'Versioned' } }), 201],
      ['400', () => service.request('GET', '/api/v1/me?x=1', { key }), 400],
      ['401', () => service.request('GET', '/api/v1/me'), 401],
      ['404 for an unknown /api/v1 path', () => service.request('GET', '/api/v1/no-such-thing', { key }), 404],
      ['405', () => service.request('PUT', '/api/v1/projects', { key, body: {} }), 405],
      ['OPTIONS', () => service.request('OPTIONS', '/api/v1/projects'), 204],
      ['HEAD', () => service.request('HEAD', '/api/v1/me', { key }), 200],
      ['413', () => raw(service, 'POST', '/api/v1/projects', { ...bearer(key), 'content-length': String(2 * MiB) }), 413],
      ['414', () => service.request('GET', `/api/v1/me?x=${'a'.repeat(9000)}`, { key }), 414],
    ]
    const versions = new Set<string>()
    for (const [label, send, status] of present) {
      const res = await send()
      t.equal(res.status, status, `${label}: ${status}`)
      const version = header(res, 'x-service-api-version')
      t.ok(version, `${label}: X-Service-Api-Version present`)
      if (version) versions.add(version)
    }
    t.equal(versions.size, 1, 'one version value throughout')
  })

  t.test('health, status and schema endpoints carry no X-Service-Api-Version, on GET, HEAD or OPTIONS', async (t) => {
    for (const path of ['/health', '/api/health', '/status', '/status.json', '/openapi.json', '/docs']) {
      const res = await service.request('GET', path)
      t.equal(res.status, 200, `${path}: 200`)
      t.equal(res.headers.get('x-service-api-version'), null, `${path}: no version header`)
      t.ok(res.headers.get('x-request-id'), `${path}: still a request id`)
      const head = await service.request('HEAD', path)
      t.equal(head.headers.get('x-service-api-version'), null, `HEAD ${path}: no version header`)
      const options = await service.request('OPTIONS', path)
      t.equal(options.status, 204, `OPTIONS ${path}: 204`)
      t.equal(options.headers.get('x-service-api-version'), null, `OPTIONS ${path}: no version header`)
    }
  })
})

// ---------------------------------------------------------------------------------
// Query strings

t.test('query: unknown, repeated or blank parameters on reads are refused with INVALID_QUERY', async (t) => {
  const { service, olive: { key } } = await world(t, { projects: numbered(3) })
  t.equal((await service.request('GET', '/api/v1/projects?limit=2', { key })).status, 200, 'a known parameter is accepted')
  t.equal((await service.request('GET', '/api/v1/projects?limit=2&archived=include', { key })).status, 200, 'two known parameters')
  t.equal((await service.request('GET', '/api/v1/projects?externalItemId=none-such', { key })).status, 200, 'a free-text parameter')
  const reads: [string, string][] = [
    ['unknown on an operation without parameters', '/api/v1/me?x=1'],
    ['unknown beside known ones', '/api/v1/projects?limit=2&colour=red'],
    ['repeated', '/api/v1/projects?limit=2&limit=3'],
    ['repeated with the same value', '/api/v1/projects?limit=2&limit=2'],
    ['blank value', '/api/v1/projects?limit='],
    ['no value at all', '/api/v1/projects?limit'],
    ['whitespace value', '/api/v1/projects?archived=%20'],
    // Free-text parameters, where only the blank rule refuses.
    ['blank free-text value', '/api/v1/projects?externalItemId='],
    ['whitespace free-text value', '/api/v1/projects?externalItemId=%20%20'],
    ['blank cursor', '/api/v1/projects?cursor='],
    ['blank unknown', '/api/v1/me?x='],
    ['unknown on a keyless read', '/health?x=1'],
  ]
  for (const [label, path] of reads) {
    refused(t, await service.request('GET', path, { key }), 400, 'INVALID_QUERY', `GET: ${label}`)
  }
  const head = await service.request('HEAD', '/api/v1/projects?limit=2&limit=3', { key })
  t.equal(head.status, 400, 'HEAD with a repeated parameter: 400')
  const unknown = refused(t, await service.request('GET', '/api/v1/projects?colour=red', { key }), 400, 'INVALID_QUERY', 'unknown')
  t.match(unknown.error, /colour/, 'the unknown parameter is named')
})

t.test('query: a write takes no query parameters at all', async (t) => {
  const { service, olive: { key } } = await world(t, { projects: [] })
  const created = await service.request('POST', '/api/v1/projects', { key, body: { name: 'Target' } })
  t.equal(created.status, 201)
  const id = created.body.project.id

  refused(t, await service.request('POST', '/api/v1/projects?x=1', { key, body: { name: 'Queried' } }), 400, 'INVALID_QUERY', 'POST ?x=1')
  refused(t, await service.request('POST', '/api/v1/projects?limit=1', { key, body: { name: 'Queried' } }), 400, 'INVALID_QUERY',
    'POST with a parameter the read of the same path knows')
  refused(t, await service.request('PATCH', `/api/v1/projects/${id}?archived=true`, { key, body: { description: 'd' } }), 400, 'INVALID_QUERY', 'PATCH')
  refused(t, await service.request('DELETE', `/api/v1/projects/${id}?mode=detach`, { key }), 400, 'INVALID_QUERY', 'DELETE')
  t.same(await projectNames(service, key), ['Target'], 'no refused write took effect')
  const still = await service.request('GET', '/api/v1/projects?limit=100', { key })
  t.equal(still.body.projects[0].description, null, 'the PATCH was not applied')
})

// ---------------------------------------------------------------------------------
// Bodies

t.test('content negotiation', async (t) => {
  const { service, olive: { key } } = await world(t, { projects: [] })

  t.test('a body is parsed as JSON whatever its Content-Type, or without one: never 415', async (t) => {
    for (const type of ['text/plain', 'application/xml', 'application/x-www-form-urlencoded', 'application/octet-stream']) {
      const res = await service.request('POST', '/api/v1/projects', { key, rawBody: JSON.stringify({ name: `Typed ${type}` }), headers: { 'content-type': type } })
      t.equal(res.status, 201, `Content-Type ${type}: 201, no 415`)
      t.equal(res.body?.project?.name, `Typed ${type}`, `Content-Type ${type}: the body was read as JSON`)
    }
    const untyped = await raw(service, 'POST', '/api/v1/projects', bearer(key), JSON.stringify({ name: 'Untyped' }))
    t.equal(untyped.status, 201, 'no Content-Type at all: 201')
    t.equal(JSON.parse(untyped.text).project.name, 'Untyped')
  })

  t.test('answers are JSON whatever the Accept header: never 406', async (t) => {
    for (const accept of ['text/html', 'application/xml', 'image/png;q=1, */*;q=0']) {
      const res = await service.request('GET', '/api/v1/me', { key, headers: { accept } })
      t.equal(res.status, 200, `Accept ${accept}: 200, no 406`)
      t.match(res.headers.get('content-type') ?? '', /^application\/json/, `Accept ${accept}: JSON`)
      t.equal(res.body?.user?.email, 'olive@acme.test')
    }
    const created = await service.request('POST', '/api/v1/projects', { key, body: { name: 'Accepting' }, headers: { accept: 'text/html' } })
    t.equal(created.status, 201, 'a write with Accept: text/html: 201')
    t.match(created.headers.get('content-type') ?? '', /^application\/json/)
    refused(t, await service.request('GET', '/api/v1/nowhere', { key, headers: { accept: 'text/html' } }), 404, 'NOT_FOUND', 'an error with Accept: text/html')
  })
})

t.test('body encoding', async (t) => {
  const { service, olive: { key } } = await world(t, { projects: [] })
  const post = (rawBody: string | Buffer) => service.request('POST', '/api/v1/projects', { key, rawBody })

  t.test('invalid UTF-8, NUL characters and unpaired surrogates, in values or keys, are refused with INVALID_BODY', async (t) => {
    const cases: [string, string | Buffer][] = [
      ['invalid UTF-8 (a lone 0xff byte)', Buffer.concat([Buffer.from('{"name":"bad '), Buffer.from([0xff]), Buffer.from('"}')])],
      ['invalid UTF-8 (a truncated sequence)', Buffer.concat([Buffer.from('{"name":"bad '), Buffer.from([0xe2, 0x82]), Buffer.from('"}')])],
      ['invalid UTF-8 (an encoded surrogate)', Buffer.concat([Buffer.from('{"name":"bad '), Buffer.from([0xed, 0xa0, 0x80]), Buffer.from('"}')])],
      ['invalid UTF-8 (an overlong encoding)', Buffer.concat([Buffer.from('{"name":"bad '), Buffer.from([0xc0, 0xaf]), Buffer.from('"}')])],
      ['a NUL character as a JSON escape', '{"name":"nul \\u0000 inside"}'],
      ['a raw NUL byte', '{"name":"nul \u0000 inside"}'],
      ['an unpaired high surrogate in a value', '{"name":"half \\ud800"}'],
      ['an unpaired low surrogate in a value', '{"name":"half \\udc00 low"}'],
    ]
    for (const [label, body] of cases) {
      refused(t, await post(body), 400, 'INVALID_BODY', label)
    }
    // Every key of this body is unknown as well, so the refusal must be for the surrogate.
    const keyed = refused(t, await post('{"name":"x","\\ud800":"y"}'), 400, 'INVALID_BODY', 'an unpaired surrogate in a key')
    t.ok(keyed?.data?.issues?.some((i: { message: string }) => /surrogate/i.test(i.message)), 'the key is refused for its surrogate')
    const nulKey = refused(t, await post('{"name":"x","a\\u0000b":"y"}'), 400, 'INVALID_BODY', 'a NUL character in a key')
    t.ok(nulKey?.data?.issues?.some((i: { message: string }) => /NUL/i.test(i.message)), 'the key is refused for its NUL')
    t.same(await projectNames(service, key), [], 'nothing was created')
  })

  t.test('paired surrogate escapes and valid multi-byte UTF-8 are accepted', async (t) => {
    const paired = await post('{"name":"pair \\ud83d\\ude00"}')
    t.equal(paired.status, 201, 'a paired surrogate escape is accepted')
    t.equal(paired.body.project.name, 'pair \u{1F600}')
    const utf8 = await post(Buffer.from('{"name":"Zo\u00eb \u6f22 \u{1F600}"}', 'utf8'))
    t.equal(utf8.status, 201, 'valid multi-byte UTF-8 is accepted')
    t.equal(utf8.body.project.name, 'Zo\u00eb \u6f22 \u{1F600}')
  })
})

t.test('body keys: the last of duplicate keys wins; an unknown key is refused by name', async (t) => {
  const { service, olive: { key } } = await world(t, { projects: [] })
  const duplicate = await service.request('POST', '/api/v1/projects', { key, rawBody: '{"name":"First","name":"Second"}' })
  t.equal(duplicate.status, 201)
  t.equal(duplicate.body.project.name, 'Second', 'the last value wins')

  const unknown = refused(t, await service.request('POST', '/api/v1/projects', { key, body: { name: 'Colourful', colour: 'red' } }),
    400, 'INVALID_BODY', 'an unknown key')
  t.match(unknown.error, /colour/, 'the message names the key')
  t.ok(unknown.data.issues?.some((i: { path: string }) => i.path === 'colour'), 'data.issues[].path names the key')

  const id = duplicate.body.project.id
  const patched = refused(t, await service.request('PATCH', `/api/v1/projects/${id}`, { key, body: { name: 'Renamed', flavour: 'x' } }),
    400, 'INVALID_BODY', 'an unknown key on PATCH')
  t.ok(patched.data.issues?.some((i: { path: string }) => i.path === 'flavour'), 'PATCH: data.issues[].path names the key')
  t.same(await projectNames(service, key), ['Second'], 'refused writes took no effect')
})

t.test('body values', async (t) => {
  const { service, olive: { key } } = await world(t, { projects: [] })
  const post = (rawBody: string) => service.request('POST', '/api/v1/projects', { key, rawBody })

  t.test('an integer beyond 2^53 - 1, anywhere in a body, is refused as out of range', async (t) => {
    for (const literal of ['9007199254740993', '9007199254740992', '-9007199254740993', '1e300']) {
      const body = refused(t, await post(`{"name":${literal}}`), 400, 'INVALID_BODY', `the integer ${literal}`)
      // name must be a string anyway: the refusal must be the one for the integer itself.
      t.ok(body?.data?.issues?.some((i: { message: string }) => /integer|2\^53|range/i.test(i.message)), `${literal}: refused as out of range`)
    }
    const nested = refused(t, await post('{"name":"x","description":[1, {"deep": 9007199254740993}]}'), 400, 'INVALID_BODY', 'a nested big integer')
    t.ok(nested?.data?.issues?.some((i: { message: string }) => /integer|2\^53|range/i.test(i.message)), 'nested: refused as out of range')
  })

  t.test('malformed JSON, or an array for an object, is refused with INVALID_BODY', async (t) => {
    for (const [label, body] of [
      ['truncated', '{"name":'],
      ['single quotes', "{'name':'x'}"],
      ['trailing comma', '{"name":"x",}'],
      ['trailing garbage', '{"name":"x"} {}'],
      ['a bare word', 'name'],
      ['a comment', '{"name":"x"} // done'],
    ] as const) {
      refused(t, await post(body), 400, 'INVALID_BODY', `malformed JSON: ${label}`)
    }
    refused(t, await post('["name"]'), 400, 'INVALID_BODY', 'an array instead of an object')
    t.same(await projectNames(service, key), [], 'nothing was created')
  })

  t.test('a malformed body is never quoted back: it may hold a secret', async (t) => {
    const answer = await post('{"name": "x", "token": secret-value-123}')
    refused(t, answer, 400, 'INVALID_BODY')
    t.notMatch(answer.text, /secret-value/, 'the refusal does not quote the body')
    t.match(answer.body.data.issues, [{ path: '', message: /^not JSON/ }], 'it says the body is not JSON')
  })
})

t.test('body caps: 1 MiB by default, refused with 413 by declared length before the body and as chunks arrive', async (t) => {
  const { service, olive: { key } } = await world(t, { projects: [] })
  const exact = '{"name":"Padded"}'.padEnd(MiB, ' ')
  t.equal(Buffer.byteLength(exact), MiB)
  const fits = await service.request('POST', '/api/v1/projects', { key, rawBody: exact })
  t.equal(fits.status, 201, 'a body of exactly 1 MiB is accepted')

  // Only the headers are sent: the answer must not wait for the body.
  const declared = await raw(service, 'POST', '/api/v1/projects',
    { ...bearer(key), 'content-type': 'application/json', 'content-length': String(MiB + 1), 'x-request-id': 'too-big-declared', connection: 'keep-alive' })
  const body = refused(t, declared, 413, 'BODY_TOO_LARGE', 'a declared length of 1 MiB + 1')
  t.equal(body?.data?.limitBytes, MiB, 'data.limitBytes')
  t.equal(body?.requestId, 'too-big-declared', 'requestId is the one sent')
  t.equal(declared.headers['x-request-id'], 'too-big-declared')
  t.ok(declared.headers['x-service-api-version'], 'the version header')
  t.ok(declared.closed, 'the connection closes')

  refused(t, await raw(service, 'POST', '/api/v1/projects', bearer(key), exact + ' '), 413, 'BODY_TOO_LARGE', 'a body of 1 MiB + 1 actually sent')

  // A chunked body that grows past the cap and never ends: the refusal must come as the bytes arrive.
  const piece = 256 * 1024
  const chunkOf = (text: string) => `${Buffer.byteLength(text).toString(16)}\r\n${text}\r\n`
  const growing = await rawExchange(service.url,
    rawRequest('POST', '/api/v1/projects', { ...bearer(key), 'transfer-encoding': 'chunked', 'x-request-id': 'too-big-chunked', connection: 'keep-alive' }),
    { chunks: [chunkOf('{"name":"Chunked"}'), ...Array.from({ length: 8 }, () => chunkOf(' '.repeat(piece)))], gapMs: 20 })
  const chunked = refused(t, growing, 413, 'BODY_TOO_LARGE', 'a chunked body growing past 1 MiB')
  t.equal(chunked?.data?.limitBytes, MiB, 'chunked: data.limitBytes')
  t.equal(chunked?.requestId, 'too-big-chunked', 'chunked: requestId is the one sent')
  t.equal(growing.headers['x-request-id'], 'too-big-chunked')
  t.ok(growing.closed, 'chunked: the connection closes')

  // The same 1 MiB body, chunked, is accepted.
  const pieces = [0, 1, 2, 3].map((i) => exact.slice(i * piece, (i + 1) * piece))
  const within = await rawExchange(service.url,
    rawRequest('POST', '/api/v1/projects', { ...bearer(key), 'transfer-encoding': 'chunked' }),
    { chunks: [...pieces.map(chunkOf), '0\r\n\r\n'] })
  t.equal(within.status, 201, 'a chunked body of exactly 1 MiB is accepted')
  t.same(await projectNames(service, key), ['Padded', 'Padded'], 'only the bodies within the cap were written')
})

t.test('an answer sent before the body arrived reaches the client whole while the body is still coming', async (t) => {
  const { service, olive: { key } } = await world(t, { projects: [] })
  const rest = Buffer.alloc(2 * MiB, ' ')
  // The refusal by declared length, the client sending its body regardless.
  const refusedEarly = await rawExchange(service.url,
    rawRequest('POST', '/api/v1/projects', { ...bearer(key), 'content-type': 'application/json', 'content-length': String(2 * MiB + 1) }, '{'),
    { afterAnswer: rest })
  refused(t, refusedEarly, 413, 'BODY_TOO_LARGE', 'the refusal is read whole')
  t.ok(refusedEarly.closed, 'then the connection closes')
  // A read whose route takes no body, answered with the (large) OpenAPI document.
  const document = await rawExchange(service.url,
    rawRequest('GET', '/openapi.json', { 'content-type': 'application/json', 'content-length': String(2 * MiB + 1) }, '{'),
    { afterAnswer: rest })
  t.equal(document.status, 200)
  t.equal(Number(document.headers['content-length']), document.body.length, 'every byte of the document arrived')
  t.ok(jsonOf(document)?.openapi, 'and it parses')

  // A request sent after the refused body, on the connection the refusal closes, is
  // never served, though the connection goes on reading what arrives for a moment.
  const pipelined = rawRequest('POST', '/api/v1/projects', { ...bearer(key), 'content-type': 'application/json', connection: 'keep-alive' },
    JSON.stringify({ name: 'Pipelined after a refusal' }))
  const refusedThenMore = await rawExchange(service.url,
    rawRequest('POST', '/api/v1/projects', { ...bearer(key), 'content-type': 'application/json', 'content-length': String(MiB + 1),
      connection: 'keep-alive' }, '{'),
    { afterAnswer: Buffer.concat([Buffer.alloc(MiB, ' '), pipelined]) })
  refused(t, refusedThenMore, 413, 'BODY_TOO_LARGE', 'the refusal')
  t.equal(refusedThenMore.text.match(/HTTP\/1\.1/g)?.length ?? 0, 0, 'no second answer follows it')
  t.same(await projectNames(service, key), [], 'the request after it did not run')
})

// ---------------------------------------------------------------------------------
// Refusals of the HTTP parser, and the request timeout

t.test('header limits', async (t) => {
  const { service, olive: { key } } = await world(t, { projects: [] })

  t.test('headers over 64 KiB get a bare 431 and the connection closes', async (t) => {
    const large = await raw(service, 'GET', '/api/v1/me', { ...bearer(key), 'x-request-id': 'big-headers', 'x-padding': 'p'.repeat(60 * 1024) })
    t.equal(large.status, 200, 'headers of 60 KiB are accepted')

    for (const [label, headers] of [
      ['one header over 64 KiB', { 'x-request-id': 'too-big', 'x-padding': 'p'.repeat(70 * 1024) }],
      ['many headers over 64 KiB together', Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`x-pad-${i}`, 'p'.repeat(2000)]))],
    ] as const) {
      const res = await raw(service, 'GET', '/api/v1/me', { ...bearer(key), ...headers })
      t.equal(res.status, 431, `${label}: 431`)
      t.equal(res.headers['x-request-id'], undefined, `${label}: no X-Request-Id`)
      t.equal(res.headers['x-service-api-version'], undefined, `${label}: no version header`)
      t.equal(res.body.length, 0, `${label}: no body, no envelope`)
      t.ok(res.closed, `${label}: the connection closes`)
    }
  })

  t.test('a control character in a header value gets a bare 400', async (t) => {
    for (const [label, value] of [['\\x01', 'a\x01b'], ['\\x7f', 'a\x7fb'], ['\\x00', 'a\x00b']] as const) {
      const res = await raw(service, 'GET', '/api/v1/me', { ...bearer(key), 'x-request-id': 'ctl', 'x-note': value })
      t.equal(res.status, 400, `${label} in a header value: 400`)
      t.equal(res.headers['x-request-id'], undefined, `${label}: no X-Request-Id`)
      t.equal(res.headers['x-service-api-version'], undefined, `${label}: no version header`)
      t.equal(res.body.length, 0, `${label}: no body, no envelope`)
    }
  })
})

t.test('the request timeout, at 300 ms', async (t) => {
  const logs: LogEntry[] = []
  const { service, olive: { key } } = await world(t, { env: { REQUEST_TIMEOUT_MS: '300' }, logs, projects: [] })

  t.test('a body not complete in time gets the 408 REQUEST_TIMEOUT envelope and the connection closes', async (t) => {
    const partial = await rawExchange(service.url,
      rawRequest('POST', '/api/v1/projects', { ...bearer(key), 'content-length': '100', 'x-request-id': 'slow-body', connection: 'keep-alive' }, '{"name":'),
      { keepOpenMs: 5000 })
    refused(t, partial, 408, 'REQUEST_TIMEOUT', 'a body not complete in time')
    t.equal(partial.headers['x-request-id'], 'slow-body', 'the request id is echoed')
    t.ok(partial.closed, 'the connection closes')

    const chunkedPartial = await rawExchange(service.url,
      rawRequest('POST', '/api/v1/projects', { ...bearer(key), 'transfer-encoding': 'chunked', connection: 'keep-alive' }) + '8\r\n{"name":\r\n',
      { keepOpenMs: 5000 })
    refused(t, chunkedPartial, 408, 'REQUEST_TIMEOUT', 'a chunked body never ended')
    t.ok(chunkedPartial.closed, 'chunked: the connection closes')
  })

  t.test('headers not complete in time get a bare 408', async (t) => {
    const headers = await rawExchange(service.url, 'GET /api/v1/me HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Request-Id: slow-headers\r\n', { keepOpenMs: 5000 })
    t.equal(headers.status, 408, 'headers not complete in time: 408')
    t.ok(headers.closed, 'headers: the connection closes')

    const silent = await rawExchange(service.url, 'GET /api/v1/me HTTP/1.1\r\n', { keepOpenMs: 5000 })
    t.equal(silent.status, 408, 'only a request line: 408')
    t.ok(silent.closed, 'request line only: the connection closes')
  })

  t.test('the request timeout covers headers and body together', async (t) => {
    // Each part arriving in less than the limit is not enough.
    const slowBody = JSON.stringify({ name: 'Too slow overall' })
    const overall = await rawExchange(service.url, 'POST /api/v1/projects HTTP/1.1\r\n', {
      chunks: ['Host: 127.0.0.1\r\n', `Authorization: Bearer ${key}\r\nContent-Length: ${slowBody.length}\r\n\r\n`,
        slowBody.slice(0, 8), slowBody.slice(8)],
      gapMs: 100, keepOpenMs: 5000,
    })
    t.equal(overall.status, 408, 'headers (200 ms) then body (200 ms more) against a 300 ms limit: 408')
    t.ok(overall.closed, 'overall: the connection closes')
  })

  t.test('a request answered without reading its body must still arrive in time', async (t) => {
    for (const [label, method, path] of [['a write refused for its query', 'POST', '/api/v1/projects?x=1'], ['a read', 'GET', '/api/v1/me']] as const) {
      const unread = await rawExchange(service.url,
        rawRequest(method, path, { ...bearer(key), 'content-length': '100', connection: 'keep-alive' }, '{"name":'), { keepOpenMs: 5000 })
      t.equal(unread.status, method === 'GET' ? 200 : 400, `${label} with an incomplete body is answered`)
      t.ok(unread.closed, `${label}: the connection closes once the body is late`)
    }
  })

  t.test('a body arriving in pieces within the limit is served, and late requests are not logged as failures', async (t) => {
    const body = JSON.stringify({ name: 'In time' })
    const inTime = await rawExchange(service.url,
      rawRequest('POST', '/api/v1/projects', { ...bearer(key), 'content-length': String(body.length) }),
      { chunks: [body.slice(0, 5), body.slice(5, 10), body.slice(10)], gapMs: 20 })
    t.equal(inTime.status, 201, 'a body completed in time is served')
    t.same(logs.filter((e) => e.level === 'error'), [], 'late requests are not logged as failures')
  })
})

// ---------------------------------------------------------------------------------
// Verbs, trailing slashes and long URIs

t.test('HEAD, over 20 projects', async (t) => {
  const { service, olive: { key } } = await world(t, { projects: numbered(20) })

  t.test('HEAD on a read route: 200, the uncompressed GET length and ETag, no body, never compressed', async (t) => {
    for (const path of ['/api/v1/me', '/api/v1/projects', '/health', '/openapi.json']) {
      const get = await raw(service, 'GET', path, bearer(key))
      t.equal(get.status, 200, `GET ${path}`)
      t.equal(get.headers['content-encoding'], undefined, `GET ${path} without Accept-Encoding is identity`)
      for (const acceptEncoding of [undefined, 'gzip', 'zstd', 'gzip, zstd, br']) {
        const label = `HEAD ${path}${acceptEncoding ? ` (Accept-Encoding: ${acceptEncoding})` : ''}`
        const head = await raw(service, 'HEAD', path, { ...bearer(key), ...(acceptEncoding ? { 'accept-encoding': acceptEncoding } : {}) })
        t.equal(head.status, 200, `${label}: 200`)
        t.equal(Number(head.headers['content-length']), get.body.length, `${label}: Content-Length of the uncompressed GET body`)
        t.equal(head.body.length, 0, `${label}: no body`)
        t.equal(head.headers['content-encoding'], undefined, `${label}: not compressed`)
        t.equal(head.headers.etag, get.headers.etag, `${label}: the GET's ETag`)
      }
    }
    t.ok(Number((await raw(service, 'HEAD', '/api/v1/projects', bearer(key))).headers['content-length']) > 1024,
      'the project list is large enough to be compressed on GET')
  })

  t.test('HEAD needs a key like GET, and its refusal has no body', async (t) => {
    const unauthorized = await service.request('HEAD', '/api/v1/me')
    t.equal(unauthorized.status, 401, 'HEAD still needs a key')
    t.equal(unauthorized.text, '', 'a refused HEAD has no body either')
  })
})

t.test('OPTIONS is keyless: 204 with Allow listing the verbs of the route', async (t) => {
  const { service } = await world(t, { projects: [] })
  const routes: [string, string[]][] = [
    ['/api/v1/projects', ['GET', 'HEAD', 'POST', 'OPTIONS']],
    ['/api/v1/me', ['GET', 'HEAD', 'OPTIONS']],
    ['/api/v1/projects/0b7d2a52-4c0e-4b43-9a8e-3a3c1d0f9e21', ['PATCH', 'DELETE', 'OPTIONS']],
    ['/health', ['GET', 'HEAD', 'OPTIONS']],
  ]
  for (const [path, verbs] of routes) {
    for (const [label, headers] of [['no key', {}], ['an invalid key', { authorization: 'Bearer not-a-key' }]] as const) {
      const res = await service.request('OPTIONS', path, { headers })
      t.equal(res.status, 204, `OPTIONS ${path} with ${label}: 204`)
      t.same(allowOf(res), [...verbs].sort(), `OPTIONS ${path}: Allow`)
      t.equal(res.text, '', `OPTIONS ${path}: no body`)
    }
  }
  refused(t, await service.request('OPTIONS', '/api/v1/nothing'), 404, 'NOT_FOUND', 'OPTIONS on an unknown path')
})

t.test('an unsupported verb on an existing route: 405 METHOD_NOT_ALLOWED with Allow', async (t) => {
  const { service, olive: { key } } = await world(t, { projects: [] })
  const cases: [string, string, string[]][] = [
    ['PUT', '/api/v1/projects', ['GET', 'HEAD', 'POST', 'OPTIONS']],
    ['DELETE', '/api/v1/projects', ['GET', 'HEAD', 'POST', 'OPTIONS']],
    ['PROPFIND', '/api/v1/projects', ['GET', 'HEAD', 'POST', 'OPTIONS']],
    ['DELETE', '/api/v1/me', ['GET', 'HEAD', 'OPTIONS']],
    ['POST', '/api/v1/me', ['GET', 'HEAD', 'OPTIONS']],
    ['PATCH', '/api/v1/me', ['GET', 'HEAD', 'OPTIONS']],
    ['GET', '/api/v1/projects/0b7d2a52-4c0e-4b43-9a8e-3a3c1d0f9e21', ['PATCH', 'DELETE', 'OPTIONS']],
    ['POST', '/health', ['GET', 'HEAD', 'OPTIONS']],
  ]
  for (const [method, path, verbs] of cases) {
    for (const [label, options] of [['with a key', { key }], ['without a key', {}]] as const) {
      const res = await service.request(method, path, options)
      refused(t, res, 405, 'METHOD_NOT_ALLOWED', `${method} ${path} ${label}`)
      t.same(allowOf(res), [...verbs].sort(), `${method} ${path} ${label}: Allow`)
    }
  }
  const trailing = await service.request('PUT', '/api/v1/me/', { key })
  refused(t, trailing, 405, 'METHOD_NOT_ALLOWED', 'PUT with a trailing slash')
})

t.test('trailing slashes', async (t) => {
  const { service, olive: { key } } = await world(t, { projects: numbered(2) })

  t.test('one trailing slash is tolerated on every verb and on keyless routes', async (t) => {
    const plain = await service.request('GET', '/api/v1/me', { key })
    const slashed = await service.request('GET', '/api/v1/me/', { key })
    t.equal(slashed.status, 200, '/api/v1/me/: 200')
    t.same(slashed.body, plain.body, '/api/v1/me/ answers as /api/v1/me')
    const listed = await service.request('GET', '/api/v1/projects/?limit=1', { key })
    t.equal(listed.status, 200, '/api/v1/projects/?limit=1: 200')
    t.equal(listed.body.projects.length, 1, 'the query still applies')
    const created = await service.request('POST', '/api/v1/projects/', { key, body: { name: 'Slashed' } })
    t.equal(created.status, 201, 'POST /api/v1/projects/: 201')
    t.equal((await service.request('OPTIONS', '/api/v1/me/')).status, 204, 'OPTIONS /api/v1/me/: 204')
    t.equal((await service.request('GET', '/health/')).status, 200, '/health/: 200')
  })

  t.test('two trailing slashes answer 404 NOT_FOUND', async (t) => {
    refused(t, await service.request('GET', '/api/v1/me//', { key }), 404, 'NOT_FOUND', '/api/v1/me//')
    refused(t, await service.request('GET', '/api/v1/projects//?limit=1', { key }), 404, 'NOT_FOUND', '/api/v1/projects//')
    refused(t, await service.request('GET', '/health//'), 404, 'NOT_FOUND', '/health//')
  })
})

t.test('a URI over 8 KiB: 414 with requestId', async (t) => {
  const { service, olive: { key } } = await world(t, { projects: [] })
  const prefix = '/api/v1/me?x='
  const atLimit = prefix + 'a'.repeat(8192 - prefix.length)
  t.equal(atLimit.length, 8192)
  refused(t, await service.request('GET', atLimit, { key }), 400, 'INVALID_QUERY', 'a URI of exactly 8 KiB is read (and its query judged)')
  const over = await service.request('GET', atLimit + 'a', { key, headers: { 'x-request-id': 'long-uri' } })
  const body = refused(t, over, 414, 'URI_TOO_LONG', 'a URI of 8 KiB + 1')
  t.equal(body.requestId, 'long-uri', 'requestId is the one sent')
  const bare = await service.request('GET', `/api/v1?x=${'a'.repeat(9000)}`, { key })
  refused(t, bare, 414, 'URI_TOO_LONG', 'a long URI on /api/v1 itself')
  t.ok(bare.headers.get('x-service-api-version'), '/api/v1 with a long query: the version header')
  const keyless = await service.request('GET', `/health?x=${'a'.repeat(10_000)}`)
  refused(t, keyless, 414, 'URI_TOO_LONG', 'a long URI on a keyless route')
  t.equal(keyless.headers.get('x-service-api-version'), null, 'a keyless 414: no version header')
  refused(t, await service.request('POST', `/api/v1/projects/${'a'.repeat(9000)}`, { key, body: { name: 'x' } }), 414, 'URI_TOO_LONG', 'a long path on a write')
})

// ---------------------------------------------------------------------------------
// Caching and compression

t.test('ETags and revalidation', async (t) => {
  const { service, olive: { key } } = await world(t, { projects: numbered(2) })
  const first = await service.request('GET', '/api/v1/me', { key })
  const etag = first.headers.get('etag')!
  const opaque = etag.slice(1, -1)

  t.test('every JSON 200 read carries a strong ETag and Cache-Control: private, no-cache', async (t) => {
    for (const path of ['/api/v1/me', '/api/v1/projects', '/api/v1/teams', '/api/v1/models', '/health', '/api/health', '/status', '/status.json', '/openapi.json']) {
      const res = await service.request('GET', path, { key })
      t.equal(res.status, 200, `${path}: 200`)
      t.match(res.headers.get('content-type') ?? '', /^application\/json/, `${path}: JSON`)
      t.match(res.headers.get('etag') ?? '', /^"[^"]+"$/, `${path}: a strong ETag`)
      t.equal(res.headers.get('cache-control'), 'private, no-cache', `${path}: Cache-Control`)
    }
  })

  t.test('If-None-Match with the ETag, its weak or -gzip/-zstd forms, or in a list, answers 304 without a body', async (t) => {
    for (const [label, value] of [
      ['the exact ETag', etag],
      ['the weak form', `W/${etag}`],
      ['the -gzip form', `"${opaque}-gzip"`],
      ['the -zstd form', `"${opaque}-zstd"`],
      ['the weak -gzip form', `W/"${opaque}-gzip"`],
      ['a list holding the ETag', `"something-else", ${etag}`],
    ] as const) {
      const res = await raw(service, 'GET', '/api/v1/me', { ...bearer(key), 'if-none-match': value })
      t.equal(res.status, 304, `${label}: 304`)
      t.equal(res.body.length, 0, `${label}: no body`)
      t.equal(res.headers.etag, etag, `${label}: the ETag is repeated`)
      const head = await raw(service, 'HEAD', '/api/v1/me', { ...bearer(key), 'if-none-match': value })
      t.equal(head.status, 304, `HEAD with ${label}: 304`)
    }
  })

  t.test('If-None-Match with any other tag answers 200 with the full body', async (t) => {
    for (const [label, value] of [
      ['another ETag', '"not-the-etag"'],
      ['the ETag unquoted with a prefix', `x${opaque}`],
      ['the ETag with another suffix', `"${opaque}-br"`],
      ['a prefix of the ETag', `"${opaque.slice(0, -1)}"`],
    ] as const) {
      const res = await service.request('GET', '/api/v1/me', { key, headers: { 'if-none-match': value } })
      t.equal(res.status, 200, `${label}: 200`)
      t.equal(res.body?.user?.email, 'olive@acme.test', `${label}: the full body`)
    }
  })

  t.test('a list that changed answers 200 with a new ETag to its old one', async (t) => {
    const list = await service.request('GET', '/api/v1/projects', { key })
    const listTag = list.headers.get('etag')!
    t.equal((await service.request('GET', '/api/v1/projects', { key, headers: { 'if-none-match': listTag } })).status, 304, 'an unchanged list: 304')
    t.equal((await service.request('POST', '/api/v1/projects', { key, body: { name: 'Changes the list' } })).status, 201)
    const changed = await service.request('GET', '/api/v1/projects', { key, headers: { 'if-none-match': listTag } })
    t.equal(changed.status, 200, 'a changed list with the old ETag: 200')
    t.not(changed.headers.get('etag'), listTag, 'a changed list has a new ETag')
  })
})

t.test('a 304 still spends the rate budget', async (t) => {
  // General burst: 200 * 0.02 = 4 requests.
  const { service, olive: { key } } = await world(t, { env: { RATE_LIMIT_SCALE: '0.02' }, projects: [] })
  const first = await service.request('GET', '/api/v1/me', { key })
  t.equal(first.status, 200)
  const etag = first.headers.get('etag')!
  const statuses: number[] = []
  let limited: Response | undefined
  for (let i = 0; i < 10 && !limited; i++) {
    const res = await service.request('GET', '/api/v1/me', { key, headers: { 'if-none-match': etag, 'x-request-id': `revalidate-${i}` } })
    statuses.push(res.status)
    if (res.status === 429) limited = res
  }
  t.equal(statuses[0], 304, 'revalidation answers 304')
  t.ok(statuses.slice(0, -1).every((s) => s === 304), `only 304s before the refusal (${statuses.join(', ')})`)
  t.ok(statuses.length <= 5, 'the refusal comes once the burst is spent')
  t.ok(limited, '304s alone exhaust the budget')
  if (limited) {
    refused(t, limited, 429, 'RATE_LIMITED', 'after a run of 304s')
    t.match(limited.headers.get('retry-after') ?? '', /^[1-9]\d*$/, 'Retry-After in whole seconds')
    t.match(limited.body.requestId, /^revalidate-\d$/, 'requestId is the one sent')
  }
})

t.test('compression, over 20 projects', async (t) => {
  const { service, olive: { key } } = await world(t, { projects: numbered(20) })

  t.test('a large body is gzip or zstd encoded as offered, never br, and q=0 refuses an encoding', async (t) => {
    const path = '/api/v1/projects'
    const identity = await raw(service, 'GET', path, bearer(key))
    t.equal(identity.status, 200)
    t.equal(identity.headers['content-encoding'], undefined, 'no Accept-Encoding: identity')
    t.ok(identity.body.length > 1024, `the body is large (${identity.body.length} bytes)`)
    const json = JSON.parse(identity.text)
    t.equal(json.projects.length, 20)
    const identityTag = identity.headers.etag!

    const decoders = { gzip: (b: Buffer) => gunzipSync(b), zstd: (b: Buffer) => decompress(b) }
    const cases: [string, 'gzip' | 'zstd' | null][] = [
      ['gzip', 'gzip'],
      ['zstd', 'zstd'],
      ['gzip, deflate', 'gzip'],
      ['deflate, gzip;q=0.5', 'gzip'],
      ['GZIP', 'gzip'],
      ['zstd;q=0.5, gzip;q=0.8', 'gzip'],
      ['gzip;q=0, zstd', 'zstd'],
      ['zstd;q=0, gzip', 'gzip'],
      ['zstd; q=0, gzip; q=1', 'gzip'],
      ['br', null],
      ['br, deflate', null],
      ['gzip;q=0', null],
      ['zstd;q=0, gzip;q=0, br', null],
      ['identity', null],
      ['*;q=0', null],
    ]
    for (const [acceptEncoding, expected] of cases) {
      const label = `Accept-Encoding: ${acceptEncoding}`
      const res = await raw(service, 'GET', path, { ...bearer(key), 'accept-encoding': acceptEncoding })
      t.equal(res.status, 200, `${label}: 200`)
      t.equal(res.headers['content-encoding'], expected ?? undefined, `${label}: ${expected ?? 'identity'}`)
      t.match(res.headers.vary ?? '', /accept-encoding/i, `${label}: Vary: Accept-Encoding`)
      t.equal(Number(res.headers['content-length']), res.body.length, `${label}: Content-Length of the bytes sent`)
      const decoded = expected ? decoders[expected](res.body) : res.body
      t.same(JSON.parse(decoded.toString('utf8')), json, `${label}: the same JSON as identity`)
      if (expected) {
        t.ok(res.body.length < identity.body.length, `${label}: smaller than identity`)
        t.equal(res.headers.etag, `"${identityTag.slice(1, -1)}-${expected}"`, `${label}: the ETag carries -${expected}`)
        const again = await raw(service, 'GET', path, { ...bearer(key), 'accept-encoding': acceptEncoding, 'if-none-match': res.headers.etag! })
        t.equal(again.status, 304, `${label}: its ETag sent back: 304`)
        t.equal(again.body.length, 0, `${label}: 304 without a body`)
        const plain = await raw(service, 'GET', path, { ...bearer(key), 'if-none-match': res.headers.etag! })
        t.equal(plain.status, 304, `${label}: its ETag sent back without Accept-Encoding: 304`)
      } else {
        t.equal(res.headers.etag, identityTag, `${label}: the identity ETag`)
      }
    }
  })

  t.test('a small body is never compressed', async (t) => {
    for (const small of ['/health', '/api/v1/teams']) {
      const res = await raw(service, 'GET', small, { ...bearer(key), 'accept-encoding': 'gzip, zstd' })
      t.equal(res.status, 200, `${small}: 200`)
      t.ok(res.body.length <= 512, `${small}: a small body`)
      t.equal(res.headers['content-encoding'], undefined, `${small}: never compressed`)
      t.ok(JSON.parse(res.text), `${small}: plain JSON`)
    }
  })
})

// ---------------------------------------------------------------------------------
// Errors

t.test('an unexpected SQL failure: 500 with a generic message and requestId, logged with the request id', async (t) => {
  const logs: LogEntry[] = []
  const { service, olive: { key } } = await world(t, { logs, projects: [] })
  await service.db.owner.unsafe('alter function api.me(jsonb) rename to me_gone')
  let res!: Response
  try {
    res = await service.request('GET', '/api/v1/me', { key, headers: { 'x-request-id': 'broken-sql' } })
  } finally {
    await service.db.owner.unsafe('alter function api.me_gone(jsonb) rename to me')
  }
  const body = refused(t, res, 500, 'INTERNAL_ERROR', 'a missing SQL function')
  t.equal(body.requestId, 'broken-sql', 'requestId is the one sent')
  t.ok(res.headers.get('x-service-api-version'), 'the version header')
  t.equal(res.headers.get('x-request-id'), 'broken-sql')
  for (const leak of [/api\./i, /me_gone|\bme\b\(/i, /function/i, /select/i, /does not exist/i, /jsonb/i, /\bat .*\.(ts|js):\d+/, /stack/i, /postgres/i, /42883/]) {
    t.notMatch(res.text, leak, `the body does not reveal ${leak}`)
  }
  const logged = logs.filter((e) => e.level === 'error' && e.fields.requestId === 'broken-sql')
  t.equal(logged.length, 1, 'the failure is logged once with its request id')
  t.match(String((logged[0]?.fields.error as Error | undefined)?.message ?? ''), /me/, 'the log keeps the cause')

  const restored = await service.request('GET', '/api/v1/me', { key })
  t.equal(restored.status, 200, 'the service answers again once the function is back')
})

t.test('every refusal is the {error, code, data} envelope', async (t) => {
  const { service, olive: { key } } = await world(t, { projects: [] })
  const cases: [string, () => Promise<AnyResponse>, number, string][] = [
    ['bad query', () => service.request('GET', '/api/v1/projects?nope=1', { key }), 400, 'INVALID_QUERY'],
    ['bad body', () => service.request('POST', '/api/v1/projects', { key, rawBody: '{' }), 400, 'INVALID_BODY'],
    ['no key', () => service.request('GET', '/api/v1/projects'), 401, 'UNAUTHORIZED'],
    ['x-api-key', () => service.request('GET', '/api/v1/projects', { headers: { 'x-api-key': key } }), 401, 'UNAUTHORIZED'],
    ['no route', () => service.request('GET', '/api/v1/nope', { key }), 404, 'NOT_FOUND'],
    ['no keyless route', () => service.request('GET', '/nope'), 404, 'NOT_FOUND'],
    ['absent project', () => service.request('PATCH', '/api/v1/projects/0b7d2a52-4c0e-4b43-9a8e-3a3c1d0f9e21', { key, body: { name: 'x' } }), 404, 'NOT_FOUND'],
    ['bad verb', () => service.request('PUT', '/api/v1/me', { key }), 405, 'METHOD_NOT_ALLOWED'],
    ['too large', () => raw(service, 'POST', '/api/v1/projects', { ...bearer(key), 'content-length': String(5 * MiB) }), 413, 'BODY_TOO_LARGE'],
    ['too long', () => service.request('GET', `/api/v1/projects?x=${'y'.repeat(9000)}`, { key }), 414, 'URI_TOO_LONG'],
  ]
  for (const [label, send, status, code] of cases) refused(t, await send(), status, code, label)
})

t.test('Expect: 100-continue', async (t) => {
  const { service, olive: { key } } = await world(t, { projects: [] })

  t.test('a declared length over the cap is refused before 100 Continue', async (t) => {
    // A declared length over the cap is refused before the client sends anything.
    const big = await raw(service, 'POST', '/api/v1/projects',
      { ...bearer(key), 'content-type': 'application/json', 'content-length': String(2 * MiB), expect: '100-continue' })
    t.equal(big.status, 413, 'the refusal is the first answer, not 100 Continue')
    t.equal(jsonOf(big).code, 'BODY_TOO_LARGE')
  })

  t.test('a body that is wanted gets 100 Continue, then the answer', async (t) => {
    const { request } = await import('node:http')
    const outcome = await new Promise<{ continued: boolean; status: number }>((resolve, reject) => {
      let continued = false
      const body = JSON.stringify({ name: 'Continued' })
      const req = request(`${service.url}/api/v1/projects`, {
        method: 'POST',
        headers: { ...bearer(key), 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), expect: '100-continue' },
      }, (res) => {
        res.resume()
        res.on('end', () => resolve({ continued, status: res.statusCode ?? 0 }))
      })
      req.on('continue', () => { continued = true; req.end(body) })
      req.on('error', reject)
    })
    t.ok(outcome.continued, '100 Continue was sent')
    t.equal(outcome.status, 201)
  })
})

t.test('hostile input answers 4xx, never 500', async (t) => {
  const logs: LogEntry[] = []
  const { service, olive: { key } } = await world(t, { logs, projects: [] })
  const deep = '['.repeat(300_000) + ']'.repeat(300_000)
  const nested = await service.request('POST', '/api/v1/projects', { key, rawBody: deep })
  t.equal(nested.status, 400, 'a deeply nested body is refused')
  t.equal(nested.body.code, 'INVALID_BODY')
  for (const path of ['/api/v1/projects?cursor=a%00b', '/api/v1/projects?externalItemId=a%00b']) {
    const res = await service.request('GET', path, { key })
    t.equal(res.status, 400, `${path} is refused`)
    t.equal(res.body.code, 'INVALID_QUERY')
    const anonymous = await service.request('GET', path)
    t.equal(anonymous.status, 401, `${path} without a key: authentication decides first`)
  }
  t.same(logs.filter((l) => l.level === 'error'), [], 'nothing was an internal error')
})

t.test('without a key the body is not read, even when the client offers to continue', async (t) => {
  const { service } = await world(t, { projects: [] })
  const res = await raw(service, 'POST', '/api/v1/projects',
    { 'content-type': 'application/json', 'content-length': '100', expect: '100-continue' })
  t.equal(res.status, 401, 'the refusal is the first answer, not 100 Continue')
})
