// The edges of authoring and runs: verdicts, isolation between organizations, the
// transport rules on MCP, bounded expressions, and the run state machine's corners.
import t from 'tap'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { McpError } from '@modelcontextprotocol/sdk/types.js'
import { callTool, deploy, simpleDocument, waitForRun } from '../lib/automations.ts'
import { world } from '../lib/world.ts'
import { refused } from '../lib/assert.ts'

const mcpError = (promise: Promise<unknown>) => promise.then(() => null, (error: unknown) => error as McpError)

t.test('test verdicts', async (t) => {
  const { service, dev } = await world(t)
  const client = await dev.mcp()

  t.test('a failing test makes the verdict false, and a new verdict replaces the old one', async (t) => {
    const failing = simpleDocument('ops/failing', {
      tests: [{ name: 'expects the wrong greeting', input: { who: 'Ada' }, expect: { output: { greeting: 'Bye Ada' } } }],
    })
    await callTool(client, 'automation_create', { document: failing })
    const tested = await callTool(client, 'automation_test', { name: 'ops/failing' })
    t.equal(tested.result.testsPassed, false)
    t.match(tested.result.results[0].problems[0], /output is .*Hello Ada/)

    await service.db.owner`update app.automation_versions set tests_passed = true`
    t.equal((await callTool(client, 'automation_test', { name: 'ops/failing', version: 1 })).result.testsPassed, false,
      'a new verdict replaces the old one')
  })

  t.test('an automation without tests has no verdict', async (t) => {
    await callTool(client, 'automation_create', { document: simpleDocument('ops/untested', { tests: [] }) })
    const none = await callTool(client, 'automation_test', { name: 'ops/untested' })
    t.same([none.result.testsPassed, none.result.testsCheckedAt], [null, null], 'no tests, no verdict')
  })

  t.test('tests read secret placeholders, never secret values', async (t) => {
    const secretive = simpleDocument('ops/secretive', {
      steps: [{ slug: 'end', type: 'output', config: { mapping: { auth: 'Bearer {{ secrets.API_TOKEN }}' } } }],
      tests: [{ name: 'uses a secret', input: { who: 'x' }, expect: { output: { auth: 'Bearer <secret API_TOKEN>' } } }],
    })
    await callTool(client, 'automation_create', { document: secretive })
    t.equal((await callTool(client, 'automation_test', { name: 'ops/secretive' })).result.testsPassed, true,
      'tests read placeholders, never secret values')
  })
})

t.test('authoring beside ops/one', async (t) => {
  const { dev } = await world(t)
  const client = await dev.mcp()
  await callTool(client, 'automation_create', { document: simpleDocument('ops/one') })

  t.test('automation names are unique, case-insensitively: AUTOMATION_NAME_TAKEN', async (t) => {
    t.match((await mcpError(client.callTool({ name: 'automation_create', arguments: { document: simpleDocument('OPS/one') } })))?.data,
      { code: 'AUTOMATION_NAME_TAKEN', status: 409 }, 'names are unique, case-insensitively')
  })

  t.test('deploying an unknown version is refused with AUTOMATION_VERSION_UNKNOWN', async (t) => {
    t.match((await mcpError(client.callTool({ name: 'automation_deploy', arguments: { name: 'ops/one', version: 7 } })))?.data,
      { code: 'AUTOMATION_VERSION_UNKNOWN', status: 404 })
  })

  t.test('a save cannot rename an automation', async (t) => {
    t.match((await mcpError(client.callTool({ name: 'automation_save', arguments: { name: 'ops/one', document: simpleDocument('ops/other') } })))?.data,
      { code: 'INVALID_BODY', status: 400 }, 'a save cannot rename')
  })

  t.test('a name whose URL form would be ambiguous is a validation problem', async (t) => {
    const ambiguous = await callTool(client, 'automation_validate', { document: simpleDocument('ops_/x') })
    t.match(ambiguous.result.problems, [{ path: 'name', message: /_\// }], 'a name whose URL form would be ambiguous')
  })
})

t.test('another organization sees none of it', async (t) => {
  const { dev, gina } = await world(t, { worker: true })
  await deploy(await dev.mcp(), simpleDocument('ops/greeter'))
  const started = await dev.post('/api/v1/automations/ops__greeter/runs', { input: { who: 'a' } })
  await waitForRun(dev.get, started.body.runId)
  const as = (method: string, path: string, body?: unknown) => gina.request(method, path, { body })
  t.same((await as('GET', '/api/v1/automations')).body.automations, [])
  refused(t, await as('GET', '/api/v1/automations/ops__greeter'), 404, 'AUTOMATION_NOT_FOUND', 'reading')
  refused(t, await as('POST', '/api/v1/automations/ops__greeter/runs', { mode: 'mock' }), 404, 'AUTOMATION_NOT_FOUND', 'starting')
  t.same((await as('GET', '/api/v1/runs')).body.runs, [])
  refused(t, await as('GET', `/api/v1/runs/${started.body.runId}`), 404, 'NOT_FOUND', 'reading a run')
  refused(t, await as('POST', `/api/v1/runs/${started.body.runId}/cancel`), 404, 'NOT_FOUND', 'cancelling a run')
  const mcp = await mcpError((await gina.mcp())
    .callTool({ name: 'automation_get', arguments: { name: 'ops/greeter' } }))
  t.match(mcp?.data, { code: 'AUTOMATION_NOT_FOUND' }, 'nor through MCP')
})

t.test('MCP over HTTP', async (t) => {
  const { service, dev } = await world(t)
  const list = { jsonrpc: '2.0', id: 1, method: 'tools/list' }

  t.test('MCP answers JSON whatever the Accept and Content-Type: no 406 or 415', async (t) => {
    const plain = await fetch(`${service.url}/api/v1/mcp`, {
      method: 'POST', body: JSON.stringify(list), headers: { authorization: `Bearer ${dev.key}`, 'content-type': 'text/plain' },
    })
    t.equal(plain.status, 200, 'no Accept and a text/plain body still get JSON')
    t.equal((await plain.json() as { result: { tools: unknown[] } }).result.tools.length, 11)
  })

  t.test('MCP selects the organization by X-Organization-Slug like every route', async (t) => {
    const slugged = await service.request('POST', '/api/v1/mcp', { key: dev.key, org: 'acme', body: list })
    t.equal(slugged.status, 200, 'X-Organization-Slug selects the organization')
    const wrongOrg = await service.request('POST', '/api/v1/mcp', { key: dev.key, org: 'globex', body: list })
    refused(t, wrongOrg, 403, 'ORG_FORBIDDEN', 'an organization the key holder is not in')
  })
})

t.test('each MCP request draws once on the reads-and-CRUD budget', async (t) => {
  // Scale 0.02: the general bucket holds 4 tokens.
  const { service, dev } = await world(t, { env: { RATE_LIMIT_SCALE: '0.02' } })
  const list = { jsonrpc: '2.0', id: 1, method: 'tools/list' }
  for (let i = 0; i < 4; i++) t.equal((await service.request('POST', '/api/v1/mcp', { key: dev.key, body: list })).status, 200)
  refused(t, await service.request('POST', '/api/v1/mcp', { key: dev.key, body: list }), 429, 'RATE_LIMITED',
    'MCP requests draw on the reads-and-CRUD budget')
})

t.test('runaway expressions fail their step instead of holding the process', async (t) => {
  const { dev } = await world(t, { worker: true })
  const client = await dev.mcp()
  const endless = '{{ ($f := function($n){ $f($n + 1) }; $f(0)) }}'
  await deploy(client, {
    name: 'ops/runaway',
    steps: [{ slug: 'spin', type: 'set', config: { values: { x: endless } }, next: { success: 'end' } }, { slug: 'end', type: 'output', config: { mapping: {} } }],
    tests: [{ name: 'spins', expect: { status: 'failed', failureCode: 'node_error' } }],
  })
  t.equal((await callTool(client, 'automation_test', { name: 'ops/runaway' })).result.testsPassed, true, 'the test settles')
  const started = await dev.post('/api/v1/automations/ops__runaway/runs', {})
  const run = await waitForRun(dev.get, started.body.runId)
  t.match(run, { status: 'failed', failureCode: 'node_error' })
  t.match(run.detail, /timeout|Stack overflow/)
})

t.test('runs of ops/nul, an http step answering a NUL byte, one of them in Alpha', async (t) => {
  const server = http.createServer((_req, res) => {
    res.setHeader('content-type', 'text/plain')
    res.end('a\u0000b')
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()) }))
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/nul`
  const { service, alpha, dev, max } = await world(t, { worker: true })
  const client = await dev.mcp()
  await deploy(client, {
    name: 'ops/nul',
    steps: [{ slug: 'get', type: 'http', config: { method: 'POST', url }, next: { success: 'end' } },
      { slug: 'end', type: 'output', config: { mapping: { body: '{{ steps.get.output.body }}' } } }],
  })
  const nul = await waitForRun(dev.get, (await dev.post('/api/v1/automations/ops__nul/runs', {})).body.runId)
  await dev.post(`/api/v1/projects/${alpha}/automations/ops__nul`, {})
  const inProject = await dev.post(`/api/v1/projects/${alpha}/automations/ops__nul/runs`, {})
  await waitForRun(dev.get, inProject.body.runId)

  t.test('a NUL from an endpoint is stored as U+FFFD', async (t) => {
    t.match(nul, { status: 'completed', output: { body: 'a\ufffdb' } }, 'a NUL from an endpoint is stored as U+FFFD')
  })

  t.test('a run list with include=effects carries the effects and nothing else included', async (t) => {
    const withEffects = await dev.get(`/api/v1/projects/${alpha}/runs?include=effects`)
    t.match(withEffects.body.runs[0].effects, [{ step: 'get', type: 'http', method: 'POST' }])
    t.notOk('output' in withEffects.body.runs[0])
  })

  t.test('fields reads a key the run has no value for as null', async (t) => {
    const some = await dev.get(`/api/v1/runs/${inProject.body.runId}?fields=status,startedVia,projectId`)
    t.same(some.body, { status: 'completed', startedVia: null, projectId: alpha }, 'a key the run has no value for reads as null')
  })

  t.test('cancel and delete have project-route twins', async (t) => {
    refused(t, await dev.post(`/api/v1/projects/${alpha}/runs/${inProject.body.runId}/cancel`), 409, 'RUN_FINISHED', 'cancel, project form')
    t.equal((await dev.del(`/api/v1/projects/${alpha}/runs/${inProject.body.runId}`)).status, 204, 'delete, project form')
  })

  t.test('an organization-wide automation cannot be started in a project the caller only reads', async (t) => {
    await deploy(client, simpleDocument('ops/free'))
    refused(t, await max.post(`/api/v1/projects/${alpha}/automations/ops__free/runs`, { mode: 'mock', input: { who: 'x' } }), 403,
      'ROLE_FORBIDDEN', 'an organization-wide automation in a project the caller only reads')
  })

  t.test('a commit from a worker that no longer holds the run changes nothing', async (t) => {
    const [row] = await service.db.owner`select organization_id, id, seq from app.runs where id = ${nul.runId}`
    const [stale] = await service.db.owner`select app.worker_run_commit(${row!.organization_id}, ${row!.id}, ${row!.seq - 1},
      ${service.db.owner.json({ state: {}, trace: [], effects: [], outcome: 'complete', output: { forged: true } })}) as status`
    t.equal(stale!.status, 'lost')
    t.same((await dev.get(`/api/v1/runs/${nul.runId}`)).body.output, { body: 'a\ufffdb' })
  })
})

t.test('a cancel requested while a step parks the run is honoured', async (t) => {
  const { service, dev } = await world(t)
  await deploy(await dev.mcp(), {
    name: 'ops/gate',
    steps: [{ slug: 'approve', type: 'approval', config: { title: 'ok?' }, next: { approved: 'end' } }, { slug: 'end', type: 'output', config: { mapping: {} } }],
  })
  const started = await dev.post('/api/v1/automations/ops__gate/runs', {})
  const [claim] = await service.db.owner`select app.worker_run_claim(r.organization_id, r.id) as claim from app.runs r where r.id = ${started.body.runId}`
  t.ok(claim!.claim, 'a worker took the run')
  t.match((await dev.post(`/api/v1/runs/${started.body.runId}/cancel`)).body, { status: 'running', cancelRequested: true })
  const [run] = await service.db.owner`select organization_id, seq from app.runs where id = ${started.body.runId}`
  const [parked] = await service.db.owner`select app.worker_run_commit(${run!.organization_id}, ${started.body.runId}, ${run!.seq},
    ${service.db.owner.json({ state: {}, trace: [], effects: [], outcome: 'park', waitingFor: 'approval', wait: { slug: 'approve', title: 'ok?' } })}) as status`
  t.equal(parked!.status, 'cancelled', 'the step boundary honours the cancel instead of parking')
  const [approvals] = await service.db.owner`select count(*)::int as n from app.run_approvals`
  t.equal(approvals!.n, 0, 'no approval waits for anyone')
})
