// Webhook deliveries (SPEC.md "Webhook delivery", "Webhook token", the webhook rows of
// Limits): acceptance and the run it starts, every refusal, deduplication with the
// clock pinned, and the transaction that makes an accepted delivery always have its run.
import t, { type Test } from 'tap'
import http from 'node:http'
import { callTool, deploy, waitForRun } from '../lib/automations.ts'
import { world, type World, type WorldOptions } from '../lib/world.ts'
import { refused } from '../lib/assert.ts'
import { rawExchange } from '../lib/raw.ts'
import { pinClock } from '../lib/db.ts'
import type { LogEntry, Response } from '../lib/service.ts'
import { startService } from '../../server/service.ts'
import { loadConfig } from '../../server/core/config.ts'
import { createLogger } from '../../server/core/log.ts'

const echo = (name: string, extra: Record<string, unknown> = {}) => ({
  name, description: 'Echoes its payload',
  steps: [{ slug: 'end', type: 'output', config: { mapping: { got: '{{ input.payload }}' } } }],
  ...extra,
})
// An inputs schema that describes the webhook wrapper: the payload must name someone.
const strictInputs = {
  type: 'object', required: ['trigger', 'payload'],
  properties: { trigger: { const: 'webhook' }, payload: { type: 'object', required: ['who'], properties: { who: { type: 'string' } } } },
}

const TRIGGERS = '/api/v1/automations/ops__hook/triggers'
const hook = (token: string, project?: string) =>
  project ? `/api/projects/${project}/automations/webhook/${token}` : `/api/automations/webhook/${token}`

interface Delivery {
  body?: unknown
  raw?: string | Buffer
  id?: string
  headers?: Record<string, string>
}
const post = (w: World, path: string, d: Delivery = {}): Promise<Response> =>
  w.service.request('POST', path, {
    ...(d.raw !== undefined ? { rawBody: d.raw } : { body: d.body ?? { n: Math.random() } }),
    headers: { ...d.headers, ...(d.id ? { 'idempotency-key': d.id } : {}) },
  })

async function setUp(t: Test, options: WorldOptions & { document?: Record<string, unknown> } = {}) {
  const w = await world(t, options)
  await deploy(await w.dev.mcp(), options.document ?? echo('ops/hook'))
  const token = (await w.dev.put(TRIGGERS, { kind: 'webhook' })).body.token as string
  return { ...w, token }
}

const runCount = async (w: World) => Number((await w.service.db.owner`select count(*)::int as n from app.runs`)[0]!.n)
const inputOf = async (w: World, runId: string) => (await w.service.db.owner`select input from app.runs where id = ${runId}`)[0]!.input
const triggerOf = async (w: World) => (await w.dev.get(TRIGGERS)).body.triggers[0]
const install = (w: World, project: string) => w.olive.post(`/api/v1/projects/${project}/automations/ops__hook`, {})

t.test('an accepted delivery answers 202 {runId}; its run is read with an API key through the run routes', async (t) => {
  const w = await setUp(t, { worker: true })
  const accepted = await post(w, hook(w.token), { body: { order: 42 } })
  t.equal(accepted.status, 202)
  t.same(Object.keys(accepted.body), ['runId'])
  t.equal(accepted.headers.get('x-service-api-version'), '3.1.0', 'the version header')
  const run = await waitForRun(w.dev.get, accepted.body.runId)
  t.match(run, { status: 'completed', input: { trigger: 'webhook', payload: { order: 42 } }, output: { got: { order: 42 } },
    startedVia: 'webhook', startedBy: /^trigger:/ })
  t.notOk('projectId' in run, 'an organization delivery runs organization-wide')
  const bound = await triggerOf(w)
  t.match(bound, { lastRunId: accepted.body.runId, lastFiredAt: Number })
  refused(t, await w.service.request('GET', hook(w.token)), 404, 'NOT_FOUND', 'the token reads nothing')

  await install(w, w.alpha)
  const inProject = await post(w, hook(w.token, w.alpha), { body: { order: 43 } })
  t.equal(inProject.status, 202)
  const projectRun = await waitForRun((path) => w.dev.get(path.replace('/api/v1/runs/', `/api/v1/projects/${w.alpha}/runs/`)),
    inProject.body.runId)
  t.match(projectRun, { status: 'completed', projectId: w.alpha, input: { payload: { order: 43 } } }, 'read under its project')
  refused(t, await w.dev.get(`/api/v1/projects/${w.beta}/runs/${inProject.body.runId}`), 404, 'NOT_FOUND', 'not under another project')
})

t.test('a body that is not JSON is its text; what jsonb cannot hold is made storable', async (t) => {
  const w = await setUp(t)
  const payloadOf = async (d: Delivery) => {
    const res = await post(w, hook(w.token), d)
    t.equal(res.status, 202, JSON.stringify(res.body))
    return (await inputOf(w, res.body.runId)).payload
  }
  t.equal(await payloadOf({ raw: 'plain words, not JSON' }), 'plain words, not JSON')
  t.equal(await payloadOf({ raw: 'a=1&b=2', headers: { 'content-type': 'application/x-www-form-urlencoded' } }), 'a=1&b=2')
  t.equal(await payloadOf({ raw: '' }), '', 'an empty body is empty text')
  t.equal(await payloadOf({ raw: '"quoted"' }), 'quoted', 'a JSON string')
  t.equal(await payloadOf({ raw: Buffer.from([0x6f, 0x6b, 0xff, 0x00, 0x21]) }), 'ok\ufffd\ufffd!', 'broken UTF-8 and NUL in text')
  t.same(await payloadOf({ raw: '{"a\\u0000b": ["x\\u0000", "\\ud800"], "n": 1}' }), { 'a\ufffdb': ['x\ufffd', '\ufffd'], n: 1 },
    'NUL and unpaired surrogates in JSON keys and strings')
  const deepest = '['.repeat(64) + ']'.repeat(64)
  t.same(await payloadOf({ raw: deepest }), JSON.parse(deepest), 'nesting up to the transport\'s depth')
  const deeper = '['.repeat(65) + ']'.repeat(65)
  t.equal(await payloadOf({ raw: deeper }), deeper, 'JSON nested past the transport\'s depth is kept as its text')
  const abyss = '{"a":'.repeat(5000) + '1' + '}'.repeat(5000)
  t.equal(await payloadOf({ raw: abyss }), abyss, 'thousands of levels too')
})

t.test('every token problem and every other verb answer the same 404', async (t) => {
  const logs: LogEntry[] = []
  const w = await setUp(t, { logs })
  const tokens = [w.token]
  // One keep-alive client for every verb (fetch closes the connection after a HEAD).
  const agent = new http.Agent({ keepAlive: true })
  t.teardown(() => agent.destroy())
  const notFound: [string, http.IncomingMessage, string][] = []
  const send = (label: string, method: string, path: string, body?: string) => new Promise<void>((resolve, reject) => {
    const req = http.request(w.service.url + path, { method, agent, headers: body ? { 'content-type': 'application/json' } : {} }, (res) => {
      const chunks: Buffer[] = []
      res.on('data', (chunk: Buffer) => chunks.push(chunk)).on('end', () => {
        notFound.push([label, res, Buffer.concat(chunks).toString()])
        resolve()
      })
    })
    req.on('error', reject)
    req.end(body)
  })
  await send('unknown token', 'POST', hook('A'.repeat(43)), '{}')
  await send('unknown token, project URL', 'POST', hook('A'.repeat(43), w.alpha), '{}')
  await send('unknown token, not JSON', 'POST', hook('nope'), 'text')
  await send('a path beneath the URL', 'POST', `${hook(w.token)}/more`, '{}')
  await send('no token', 'POST', '/api/automations/webhook', '{}')
  for (const method of ['GET', 'HEAD', 'OPTIONS', 'PUT', 'PATCH', 'DELETE']) {
    await send(`${method} on a live URL`, method, hook(w.token))
    await send(`${method} on a live project URL`, method, hook(w.token, w.alpha))
  }
  const rotated = (await w.dev.put(TRIGGERS, { kind: 'webhook', rotateToken: true })).body.token
  tokens.push(rotated)
  await send('a rotated token', 'POST', hook(w.token), '{}')
  await w.dev.put(TRIGGERS, { kind: 'webhook', enabled: false })
  await send('a disabled trigger', 'POST', hook(rotated), '{}')
  await w.dev.put(TRIGGERS, { kind: 'event', event: 'project.created' })
  await send('a replaced webhook', 'POST', hook(rotated), '{}')
  const last = (await w.dev.put(TRIGGERS, { kind: 'webhook' })).body.token
  tokens.push(last)
  await w.dev.del(TRIGGERS)
  await send('a deleted trigger', 'POST', hook(last), '{}')

  const [referenceLabel, reference, referenceBody] = notFound[0]!
  const names = (res: http.IncomingMessage) => Object.keys(res.headers).sort()
  t.same(JSON.parse(referenceBody), { error: 'Not found.', code: 'NOT_FOUND', data: {} })
  t.equal(reference.headers['x-service-api-version'], '3.1.0')
  t.equal(reference.headers.allow, undefined, 'no Allow')
  for (const [label, res, text] of notFound) {
    t.equal(res.statusCode, 404, `${label}: 404`)
    t.same(names(res), names(reference), `${label}: the same header names as ${referenceLabel}`)
    for (const name of names(reference)) {
      if (!['date', 'x-request-id'].includes(name)) t.equal(res.headers[name], reference.headers[name], `${label}: ${name}`)
    }
    if (label.startsWith('HEAD')) t.equal(text, '', `${label}: no body`)
    else t.equal(text, referenceBody, `${label}: the same body`)
  }
  const lines = JSON.stringify(logs)
  for (const token of tokens) t.notOk(lines.includes(token), 'no log line holds a token')
  t.ok(logs.some((l) => l.fields.route === '/api/automations/webhook/:token'), 'request lines name the route pattern')
})

t.test('query parameters are refused on both URLs', async (t) => {
  const w = await setUp(t)
  await install(w, w.alpha)
  refused(t, await post(w, `${hook(w.token, w.alpha)}?projectId=${w.alpha}`), 400, 'INVALID_QUERY', 'projectId on the project URL')
  refused(t, await post(w, `${hook(w.token)}?projectId=${w.alpha}`), 400, 'INVALID_QUERY', 'projectId on the organization URL')
  const other = await post(w, `${hook(w.token)}?x=1`)
  refused(t, other, 400, 'INVALID_QUERY', 'any parameter')
  t.equal(other.headers.get('x-service-api-version'), '3.1.0')
  t.equal(await runCount(w), 0)
})

t.test('bodies are capped at 262,144 bytes as they arrive', async (t) => {
  const w = await setUp(t)
  const cap = 262_144
  const exact = JSON.stringify({ pad: 'x'.repeat(cap - 10) })
  t.equal(Buffer.byteLength(exact), cap)
  t.equal((await post(w, hook(w.token), { raw: exact })).status, 202, 'exactly the cap')
  const over = refused(t, await post(w, hook(w.token), { raw: exact + ' ' }), 413, 'BODY_TOO_LARGE', 'one byte over')
  t.equal(over.data.limitBytes, cap)
  const piece = 64 * 1024
  const chunkOf = (text: string) => `${Buffer.byteLength(text).toString(16)}\r\n${text}\r\n`
  const growing = await rawExchange(w.service.url,
    `POST ${hook(w.token)} HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\nConnection: keep-alive\r\n\r\n`,
    { chunks: Array.from({ length: 12 }, () => chunkOf('y'.repeat(piece))), gapMs: 20 })
  refused(t, growing, 413, 'BODY_TOO_LARGE', 'a chunked body growing past the cap, never ended')
  t.equal(growing.headers['x-service-api-version'], '3.1.0')
  t.equal(await runCount(w), 1, 'only the body within the cap started a run')
})

t.test('the Idempotency-Key header must be 1-255 printable ASCII characters', async (t) => {
  const w = await setUp(t)
  refused(t, await post(w, hook(w.token), { id: 'k'.repeat(256) }), 400, 'INVALID_HEADER', '256 characters')
  t.equal((await post(w, hook(w.token), { id: 'k'.repeat(255) })).status, 202, '255 characters')
})

t.test('the inputs schema checks the run input before acceptance; a refusal creates nothing and moves no stamp', async (t) => {
  const w = await setUp(t, { document: echo('ops/hook', { inputs: strictInputs }) })
  const before = await triggerOf(w)
  const body = refused(t, await post(w, hook(w.token), { body: { whom: 'Ada' } }), 400, 'AUTOMATION_INPUT_INVALID', 'a payload without who')
  t.same(body.data.issues, [{ path: 'payload', message: 'must have required property \'who\'' }])
  const text = refused(t, await post(w, hook(w.token), { raw: 'hello' }), 400, 'AUTOMATION_INPUT_INVALID', 'text where an object is due')
  t.same(text.data.issues.map((i: { path: string }) => i.path), ['payload'])
  t.equal(await runCount(w), 0, 'no run')
  t.equal(Number((await w.service.db.owner`select count(*)::int as n from app.webhook_deliveries`)[0]!.n), 0, 'no delivery remembered')
  t.same(await triggerOf(w), before, 'no health stamp moved')
  t.equal((await post(w, hook(w.token), { body: { who: 'Ada' }, id: 'same' })).status, 202, 'a valid payload')
  refused(t, await post(w, hook(w.token), { body: { whom: 'Ada' } }), 400, 'AUTOMATION_INPUT_INVALID', 'checked again, from the cache')
})

t.test('a newly deployed version\'s inputs apply to the next delivery', async (t) => {
  const w = await setUp(t)
  t.equal((await post(w, hook(w.token), { body: { whom: 'Ada' } })).status, 202, 'version 1 takes anything')
  const client = await w.dev.mcp()
  await callTool(client, 'automation_save', { name: 'ops/hook', document: echo('ops/hook', { inputs: strictInputs }) })
  await callTool(client, 'automation_deploy', { name: 'ops/hook' })
  refused(t, await post(w, hook(w.token), { body: { whom: 'Bob' } }), 400, 'AUTOMATION_INPUT_INVALID', 'version 2 requires who')
  const accepted = await post(w, hook(w.token), { body: { who: 'Bob' } })
  t.equal(accepted.status, 202)
  t.equal(Number((await w.service.db.owner`select version from app.runs where id = ${accepted.body.runId}`)[0]!.version), 2)
})

t.test('scope: the organization URL, missing, archived and uninstalled projects, and a delivery id\'s first scope', async (t) => {
  const w = await setUp(t)
  t.equal((await post(w, hook(w.token), { id: 'first-global' })).status, 202, 'installed nowhere: the organization URL')
  await install(w, w.alpha)
  const required = refused(t, await post(w, hook(w.token)), 409, 'AUTOMATION_PROJECT_SCOPE_REQUIRED', 'installed: the organization URL')
  t.notMatch(JSON.stringify(required), 'ops/hook')

  const forbidden: string[] = []
  const refuse = async (project: string, label: string) => {
    const res = await post(w, hook(w.token, project))
    const body = refused(t, res, 403, 'AUTOMATION_PROJECT_FORBIDDEN', label)
    t.notMatch(res.text, 'ops/hook', `${label}: the automation goes unnamed`)
    forbidden.push(JSON.stringify(body))
  }
  await refuse('00000000-0000-4000-8000-000000000000', 'a missing project')
  await refuse('not-a-project', 'a malformed project id')
  await refuse(w.beta, 'a project without the installation')
  const gamma = (await w.olive.post('/api/v1/projects', { name: 'Gamma' })).body.project.id
  await install(w, gamma)
  t.equal((await post(w, hook(w.token, gamma))).status, 202, 'installed and active')
  t.equal((await w.olive.patch(`/api/v1/projects/${gamma}`, { archived: true })).status, 200)
  await refuse(gamma, 'an archived project')
  t.equal(new Set(forbidden).size, 1, 'missing, archived and uninstalled read alike')

  refused(t, await post(w, hook(w.token, w.alpha), { id: 'first-global' }), 409, 'AUTOMATION_DELIVERY_SCOPE_MISMATCH',
    'an id first used at the organization URL')
  await install(w, w.beta)
  const inAlpha = await post(w, hook(w.token, w.alpha), { id: 'per-project' })
  const inBeta = await post(w, hook(w.token, w.beta), { id: 'per-project' })
  t.equal(inBeta.status, 202)
  t.not(inBeta.body.runId, inAlpha.body.runId, 'the same id starts one run in each installed project')
  t.same((await post(w, hook(w.token, w.alpha), { id: 'per-project' })).body, { runId: inAlpha.body.runId, duplicate: true })
})

t.test('409 AUTOMATION_NOT_DEPLOYED is not remembered for deduplication', async (t) => {
  const w = await world(t)
  const client = await w.dev.mcp()
  await callTool(client, 'automation_create', { document: echo('ops/hook') })
  const bound = await w.dev.put(TRIGGERS, { kind: 'webhook' })
  t.equal(bound.body.deployed, false)
  refused(t, await post(w, hook(bound.body.token), { id: 'early', body: { a: 1 } }), 409, 'AUTOMATION_NOT_DEPLOYED')
  refused(t, await post(w, hook(bound.body.token), { body: { b: 1 } }), 409, 'AUTOMATION_NOT_DEPLOYED', 'without an id')
  t.match(await triggerOf(w), { lastSkipReason: 'not_deployed', lastSkippedAt: Number, lastRunId: null })
  await callTool(client, 'automation_deploy', { name: 'ops/hook' })
  const accepted = await post(w, hook(bound.body.token), { id: 'early', body: { a: 1 } })
  t.equal(accepted.status, 202)
  t.same(Object.keys(accepted.body), ['runId'], 'a new run, not a duplicate')
  t.same(Object.keys((await post(w, hook(bound.body.token), { body: { b: 1 } })).body), ['runId'], 'the same bytes too')
})

t.test('deduplication: 24 hours by delivery id, 2 minutes by identical bytes', async (t) => {
  const w = await setUp(t)
  const start = Date.parse('2030-01-01T00:00:00Z')
  const at = (seconds: number) => pinClock(w.service.db.owner, start + seconds * 1000)
  await at(0)
  const first = await post(w, hook(w.token), { id: 'order-1', body: { v: 1 } })
  t.equal(first.status, 202)
  await at(24 * 3600 - 1)
  t.same((await post(w, hook(w.token), { id: 'order-1', body: { v: 2 } })).body, { runId: first.body.runId, duplicate: true },
    'the same id within 24 hours, whatever the body')
  await at(24 * 3600 + 1)
  const later = await post(w, hook(w.token), { id: 'order-1', body: { v: 1 } })
  t.same(Object.keys(later.body), ['runId'], 'past 24 hours: a new run')
  t.not(later.body.runId, first.body.runId)

  await at(100_000)
  const bytes = await post(w, hook(w.token), { raw: '{"same": true}' })
  await at(100_000 + 119)
  t.same((await post(w, hook(w.token), { raw: '{"same": true}' })).body, { runId: bytes.body.runId, duplicate: true },
    'identical bytes within 2 minutes')
  t.same(Object.keys((await post(w, hook(w.token), { raw: '{"same":true}' })).body), ['runId'], 'other bytes, same JSON: a new run')
  t.same(Object.keys((await post(w, hook(w.token), { raw: '{"same": true}', id: 'with-id' })).body), ['runId'],
    'the same bytes with an id are judged by the id')
  await at(100_000 + 121)
  t.same(Object.keys((await post(w, hook(w.token), { raw: '{"same": true}' })).body), ['runId'], 'past 2 minutes: a new run')
})

t.test('a duplicate is answered only after activity and installation are rechecked', async (t) => {
  const w = await setUp(t)
  await install(w, w.alpha)
  const first = await post(w, hook(w.token, w.alpha), { id: 'again' })
  t.equal(first.status, 202)
  await w.olive.patch(`/api/v1/projects/${w.alpha}`, { archived: true })
  refused(t, await post(w, hook(w.token, w.alpha), { id: 'again' }), 403, 'AUTOMATION_PROJECT_FORBIDDEN', 'the project was archived')
  await w.olive.patch(`/api/v1/projects/${w.alpha}`, { archived: false })
  t.same((await post(w, hook(w.token, w.alpha), { id: 'again' })).body, { runId: first.body.runId, duplicate: true }, 'restored')
  await w.olive.del(`/api/v1/projects/${w.alpha}/automations/ops__hook`)
  refused(t, await post(w, hook(w.token, w.alpha), { id: 'again' }), 403, 'AUTOMATION_PROJECT_FORBIDDEN', 'uninstalled')
  await install(w, w.alpha)
  await w.dev.put(TRIGGERS, { kind: 'webhook', enabled: false })
  refused(t, await post(w, hook(w.token, w.alpha), { id: 'again' }), 404, 'NOT_FOUND', 'the trigger was disabled')
})

t.test('429 with Retry-After: the sender\'s budget before the token check, the trigger\'s after it', async (t) => {
  const w = await setUp(t)
  const owner = w.service.db.owner
  await pinClock(owner, Date.parse('2030-01-01T00:00:00Z'))
  t.equal((await post(w, hook(w.token))).status, 202)
  await owner`update app.rate_buckets set tokens = 0 where bucket like 'webhook-sender:%'`
  const sender = await post(w, hook('A'.repeat(43)))
  refused(t, sender, 429, 'RATE_LIMITED', 'an unknown token once the sender is out of budget')
  t.match(sender.headers.get('retry-after'), /^[1-9]\d*$/)
  t.equal(sender.headers.get('x-service-api-version'), '3.1.0')
  await owner`update app.rate_buckets set tokens = 100 where bucket like 'webhook-sender:%'`
  await owner`update app.rate_buckets set tokens = 0 where bucket like 'webhook-trigger:%'`
  const trigger = await post(w, hook(w.token))
  refused(t, trigger, 429, 'RATE_LIMITED', 'the trigger out of budget')
  t.equal(trigger.headers.get('retry-after'), '3', 'a token comes back every 3 seconds at 20 a minute')
  refused(t, await post(w, hook('A'.repeat(43))), 404, 'NOT_FOUND', 'an unknown token never reaches a trigger\'s budget')
  t.equal(await runCount(w), 1)
})

t.test('a delivery whose run cannot be written is not accepted', async (t) => {
  const logs: LogEntry[] = []
  const w = await setUp(t, { logs })
  const owner = w.service.db.owner
  await owner.unsafe(`create function public.refuse_runs() returns trigger language plpgsql as $$
    begin raise exception 'no runs today'; end $$`)
  await owner.unsafe('create trigger refuse_runs before insert on app.runs for each row execute function public.refuse_runs()')
  refused(t, await post(w, hook(w.token), { id: 'doomed', body: { a: 1 } }), 500, 'INTERNAL_ERROR', 'the run insert fails')
  refused(t, await post(w, hook(w.token), { body: { b: 1 } }), 500, 'INTERNAL_ERROR', 'without an id')
  t.equal(Number((await owner`select count(*)::int as n from app.webhook_deliveries`)[0]!.n), 0, 'no delivery was remembered')
  t.match(await triggerOf(w), { lastFiredAt: null, lastRunId: null })
  t.ok(logs.some((l) => l.message === 'request failed'), 'the failure is logged')
  t.notOk(JSON.stringify(logs).includes(w.token), 'without the token')
  await owner.unsafe('drop trigger refuse_runs on app.runs')
  const retried = await post(w, hook(w.token), { id: 'doomed', body: { a: 1 } })
  t.equal(retried.status, 202)
  t.same(Object.keys(retried.body), ['runId'], 'the retry starts the run')
})

t.test('once a token\'s deployed version was checked, a delivery is one statement', async (t) => {
  const w = await setUp(t, { document: echo('ops/hook', { inputs: strictInputs }) })
  const statements: string[] = []
  const config = loadConfig({ DATABASE_URL: w.service.db.url, PORT: '0', LOG_LEVEL: 'silent' })
  const counted = await startService(config, w.service.db.url, { port: 0, log: createLogger('silent'), onQuery: (q) => statements.push(q) })
  t.teardown(counted.close)
  const deliver = async (body: unknown) => {
    statements.length = 0
    const res = await fetch(`${counted.url}${hook(w.token)}`, { method: 'POST', body: JSON.stringify(body) })
    // A new connection's one-time type lookup is the driver's, not the delivery's.
    return { status: res.status, statements: statements.filter((q) => !q.includes('pg_catalog.pg_type')).length }
  }
  t.same(await deliver({ who: 'a' }), { status: 202, statements: 2 }, 'the first delivery fetches the version to check against')
  t.same(await deliver({ who: 'b' }), { status: 202, statements: 1 }, 'then one statement')
  t.same(await deliver({ whom: 'c' }), { status: 400, statements: 1 }, 'a refused input too')
  const client = await w.dev.mcp()
  await callTool(client, 'automation_save', { name: 'ops/hook', document: echo('ops/hook') })
  await callTool(client, 'automation_deploy', { name: 'ops/hook' })
  t.same(await deliver({ whom: 'd' }), { status: 202, statements: 2 }, 'a new deployed version is fetched once')
  t.same(await deliver({ whom: 'e' }), { status: 202, statements: 1 })
})

t.test('an id first used at a project URL is refused at the organization URL', async (t) => {
  const w = await setUp(t)
  await install(w, w.alpha)
  t.equal((await post(w, hook(w.token, w.alpha), { id: 'first-in-alpha' })).status, 202)
  t.equal((await w.olive.del(`/api/v1/projects/${w.alpha}/automations/ops__hook`)).status, 204)
  refused(t, await post(w, hook(w.token), { id: 'first-in-alpha' }), 409, 'AUTOMATION_DELIVERY_SCOPE_MISMATCH',
    'the organization URL after the project URL')
  t.equal((await post(w, hook(w.token), { id: 'fresh' })).status, 202, 'a new id is accepted there')
})

t.test('the same delivery sent twice at once starts one run', async (t) => {
  const w = await setUp(t)
  const byId = await Promise.all([1, 2, 3, 4].map(() => post(w, hook(w.token), { id: 'at-once', body: { n: 1 } })))
  t.same(byId.map((r) => r.status), [202, 202, 202, 202])
  t.equal(new Set(byId.map((r) => r.body.runId)).size, 1, 'one run for one delivery id')
  t.equal(byId.filter((r) => r.body.duplicate).length, 3, 'the others are duplicates')
  const byBytes = await Promise.all([1, 2, 3, 4].map(() => post(w, hook(w.token), { raw: '{"same": "bytes"}' })))
  t.equal(new Set(byBytes.map((r) => r.body.runId)).size, 1, 'one run for identical bytes without an id')
  t.equal(await runCount(w), 2)
})

t.test('a webhook bound again deduplicates its own deliveries, not the earlier binding\'s', async (t) => {
  const w = await setUp(t)
  const first = await post(w, hook(w.token), { id: 'reused-id' })
  t.equal(first.status, 202)
  t.equal((await w.dev.put(TRIGGERS, { kind: 'event', event: 'project.created' })).body.revoked, 'webhook')
  const token = (await w.dev.put(TRIGGERS, { kind: 'webhook' })).body.token as string
  const again = await post(w, hook(token), { id: 'reused-id' })
  t.equal(again.status, 202)
  t.not(again.body.runId, first.body.runId, 'a new run, not the old binding\'s')
  t.notOk(again.body.duplicate)
  t.same((await post(w, hook(token), { id: 'reused-id' })).body, { runId: again.body.runId, duplicate: true })
})
