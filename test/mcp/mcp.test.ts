// The MCP endpoint driven by the SDK's own client: authoring tools, versions, tests,
// deployment, and refusals as JSON-RPC errors.
import t from 'tap'
import { McpError } from '@modelcontextprotocol/sdk/types.js'
import { Ajv2020 } from 'ajv/dist/2020.js'
import { automationWorld, callTool, simpleDocument } from '../lib/automations.ts'
import { documentJsonSchema, MAX_DOCUMENT_DEPTH } from '../../server/core/automations/document.ts'
import { exampleDocument } from '../../server/core/automations/example.ts'
import { MAX_BODY_DEPTH } from '../../server/transport/json-body.ts'

/** A JSON-RPC request sent as it is, past any client-side checks; answers the parsed response. */
async function rpc(service: { request: (method: string, path: string, options: object) => Promise<{ status: number; body: any }> },
  key: string, method: string, params: unknown) {
  const res = await service.request('POST', '/api/v1/mcp', { key, body: { jsonrpc: '2.0', id: 1, method, params } })
  return res.body
}

const nestedArray = (levels: number): unknown => {
  let value: unknown = 1
  for (let i = 0; i < levels; i++) value = [value]
  return value
}

t.test('tools are listed and authoring works end to end', async (t) => {
  const { olive, dev } = await automationWorld(t, { worker: false })
  const client = await dev.mcp()
  const { tools } = await client.listTools()
  t.same(tools.map((tool) => tool.name).sort(), ['automation_create', 'automation_deploy', 'automation_get', 'automation_list',
    'automation_save', 'automation_test', 'automation_validate', 'run_decide_approval', 'trigger_get', 'trigger_remove',
    'trigger_set'])
  t.ok(tools.every((tool) => tool.inputSchema.type === 'object'), 'each tool describes its arguments')

  const created = await callTool(client, 'automation_create', { document: simpleDocument('sales/greeter') })
  t.equal(created.isError, false)
  t.match(created.result, { name: 'sales/greeter', version: 1, deployed: false, testsPassed: null })

  const saved = await callTool(client, 'automation_save', { name: 'sales/greeter', document: simpleDocument('sales/greeter', { description: 'Greets, v2' }) })
  t.equal(saved.result.version, 2, 'each save is a new version')

  const tested = await callTool(client, 'automation_test', { name: 'sales/greeter' })
  t.equal(tested.result.version, 2)
  t.equal(tested.result.testsPassed, true)
  t.ok(tested.result.testsCheckedAt)
  t.same(tested.result.results.map((r: { name: string; passed: boolean }) => [r.name, r.passed]), [['greets', true]])

  const deployed = await callTool(client, 'automation_deploy', { name: 'sales/greeter', version: 1 })
  t.same(deployed.result, { name: 'sales/greeter', deployedVersion: 1 })

  const versions = await olive.get('/api/v1/automations/sales__greeter/versions')
  t.equal(versions.status, 200)
  t.equal(versions.body.deployedVersion, 1)
  t.same(versions.body.versions.map((x: any) => [x.version, x.deployed, x.testsPassed]), [[2, false, true], [1, true, null]])
  const listed = await callTool(client, 'automation_list', {})
  t.same(listed.result.automations.map((a: any) => [a.name, a.latestVersion, a.deployedVersion]), [['sales/greeter', 2, 1]])
})

t.test('the document argument carries the document\'s JSON Schema', async (t) => {
  const { dev } = await automationWorld(t, { worker: false })
  const { tools } = await (await dev.mcp()).listTools()
  const { $schema: _dialect, ...expected } = documentJsonSchema()
  for (const name of ['automation_validate', 'automation_create', 'automation_save']) {
    const tool = tools.find((found) => found.name === name)!
    t.same(tool.inputSchema.properties?.document, expected, `${name} describes its document`)
    const validate = new Ajv2020().compile(tool.inputSchema)
    const args = (document: unknown) => (name === 'automation_save' ? { name: 'sales/lead-intake', document } : { document })
    t.ok(validate(args(exampleDocument)), `${name}: the example fits the arguments`)
    t.notOk(validate(args({ ...exampleDocument, steps: [] })), `${name}: a document without steps does not`)
  }
})

t.test('validation reports every problem of a document in one pass', async (t) => {
  const { dev } = await automationWorld(t, { worker: false })
  const client = await dev.mcp()
  const broken = {
    name: 'ops/broken',
    steps: [
      { slug: 'a', type: 'set', config: { values: { x: '{{ bogus.value }}' } }, next: { success: 'missing' } },
      { slug: 'b', type: 'teleport' },
    ],
  }
  const checked = await callTool(client, 'automation_validate', { document: broken })
  t.equal(checked.isError, true)
  const paths = checked.result.problems.map((p: { path: string }) => p.path)
  for (const path of ['steps.1.type', 'steps.0.next.success', 'steps.1', 'steps.0.config.values']) t.ok(paths.includes(path), `reports ${path}`)

  const good = await callTool(client, 'automation_validate', { document: simpleDocument('ops/fine') })
  t.same(good.result, { valid: true, problems: [] })
  const refused = await callTool(client, 'automation_create', { document: broken })
  t.equal(refused.isError, true, 'an invalid document is not stored')
})

t.test('a document nested beyond the document depth is a validation problem with its path', async (t) => {
  const { dev } = await automationWorld(t, { worker: false })
  const document = { ...simpleDocument('ops/deep'), config: { variables: { deep: nestedArray(MAX_DOCUMENT_DEPTH) } } }
  const checked = await callTool(await dev.mcp(), 'automation_validate', { document })
  t.equal(checked.isError, true)
  t.equal(checked.result.problems.length, 1)
  t.match(checked.result.problems[0], { path: /^config\.variables\.deep(\.0)+$/, message: `deeper than ${MAX_DOCUMENT_DEPTH} levels` })
})

t.test('a document nested thousands of levels deep is refused as an invalid body with its path', async (t) => {
  const { service, dev } = await automationWorld(t, { worker: false })
  const res = await service.request('POST', '/api/v1/mcp', {
    key: dev.key,
    body: { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'automation_validate', arguments: { document: { steps: nestedArray(4000) } } } },
  })
  t.equal(res.status, 400)
  t.equal(res.body.code, 'INVALID_BODY')
  t.match(res.body.data.issues[0], { path: /^params\.arguments\.document\.steps(\.0)+$/, message: `nested deeper than ${MAX_BODY_DEPTH} levels` })
  t.notMatch(res.body.error, /call stack/i)
})

t.test('privileged tools without the developer capability answer a JSON-RPC error', async (t) => {
  const { service, eddie, max, dev } = await automationWorld(t, { worker: false })
  await callTool(await dev.mcp(), 'automation_create', { document: simpleDocument('ops/greeter') })
  for (const who of [eddie, max]) {
    const client = await who.mcp()
    for (const [tool, args] of [
      ['automation_create', { document: simpleDocument('ops/other') }],
      ['automation_save', { name: 'ops/greeter', document: simpleDocument('ops/greeter') }],
      ['automation_test', { name: 'ops/greeter' }],
      ['automation_deploy', { name: 'ops/greeter' }],
    ] as const) {
      const error = await client.callTool({ name: tool, arguments: args }).then(() => null, (e: unknown) => e)
      t.ok(error instanceof McpError, `${tool}: a JSON-RPC error`)
      t.match((error as McpError).data, { code: 'ROLE_FORBIDDEN', status: 403 })
    }
    t.equal((await callTool(client, 'automation_list', {})).result.automations.length, 1, 'reading is open to members')
  }
  const [versions] = await service.db.owner`select count(*)::int as n from app.automation_versions`
  t.equal(versions!.n, 1, 'nothing was written')

})

t.test('a refusal\'s message is not prefixed by the server', async (t) => {
  const { service, dev, max } = await automationWorld(t, { worker: false })
  const forbidden = await rpc(service, max.key, 'tools/call', { name: 'automation_create', arguments: { document: simpleDocument('ops/x') } })
  t.same(forbidden.error, { code: -32001, message: 'automation_create needs the developer capability.', data: { code: 'ROLE_FORBIDDEN', status: 403 } })
  const missing = await rpc(service, dev.key, 'tools/call', { name: 'automation_get', arguments: { name: 'nope' } })
  t.equal(missing.error.code, -32001)
  t.match(missing.error.data, { code: 'AUTOMATION_NOT_FOUND', status: 404 })
  t.notMatch(missing.error.message, /MCP error/, 'no "MCP error" prefix on the wire')
  // The SDK's client adds its prefix once.
  const seen = await (await dev.mcp()).callTool({ name: 'automation_get', arguments: { name: 'nope' } }).then(() => null, (e: unknown) => e)
  t.notMatch((seen as McpError).message, /MCP error -32001: MCP error/)
})

t.test('bad tool arguments are invalid params with a readable message', async (t) => {
  const { service, dev } = await automationWorld(t, { worker: false })
  const cases: [string, unknown, RegExp][] = [
    ['an unknown argument', { name: 'automation_get', arguments: { name: 'x', extra: 1 } }, /^Invalid arguments for automation_get: unknown key "extra"\.$/],
    ['an argument of the wrong type', { name: 'automation_get', arguments: { name: 5 } }, /^Invalid arguments for automation_get: name: .*string/],
    ['arguments that are not an object', { name: 'automation_get', arguments: [] }, /^Invalid tools\/call request: arguments: must be an object of named arguments\.$/],
    ['no tool name', { arguments: {} }, /^Invalid tools\/call request: name: /],
    ['an unknown tool', { name: 'teleport', arguments: {} }, /^Unknown tool "teleport"/],
  ]
  for (const [label, params, message] of cases) {
    const answer = await rpc(service, dev.key, 'tools/call', params)
    t.equal(answer.error?.code, -32602, `${label}: invalid params (${JSON.stringify(answer)})`)
    t.match(answer.error?.message, message, `${label}: the message says what is wrong`)
  }
})

t.test('a body that is no JSON-RPC message is a 400 parse error, as the document declares', async (t) => {
  const { service, dev } = await automationWorld(t, { worker: false })
  // service.request checks every answer against /openapi.json.
  for (const [label, body] of [['an object without jsonrpc', { x: 1 }], ['an empty batch', []]] as const) {
    const res = await service.request('POST', '/api/v1/mcp', { key: dev.key, body })
    t.equal(res.status, 400, label)
    t.match(res.body, { jsonrpc: '2.0', id: null, error: { code: -32700 } }, label)
  }
  const notJson = await service.request('POST', '/api/v1/mcp', { key: dev.key, rawBody: '{', headers: { 'content-type': 'application/json' } })
  t.equal(notJson.status, 400)
  t.equal(notJson.body.code, 'INVALID_BODY', 'a body that is not JSON gets the error envelope')
})

t.test('a request without a valid key is a 401 with a Bearer challenge', async (t) => {
  const { service } = await automationWorld(t, { worker: false })
  const message = { jsonrpc: '2.0', id: 1, method: 'tools/list' }
  for (const [label, key] of [['no key', undefined], ['an unknown key', 'tale_nope']] as const) {
    const res = await service.request('POST', '/api/v1/mcp', { key, body: message })
    t.equal(res.status, 401, label)
    t.equal(res.body.code, 'UNAUTHORIZED', label)
    t.equal(res.headers.get('www-authenticate'), 'Bearer', `${label}: the challenge`)
  }
})

t.test('the document format, its JSON Schema and an example are resources', async (t) => {
  const { dev } = await automationWorld(t, { worker: false })
  const client = await dev.mcp()
  const { resources } = await client.listResources()
  t.same(resources.map((r) => r.uri).sort(), ['tale://automations/document-schema', 'tale://automations/example', 'tale://automations/format'])

  const read = async (uri: string) => (await client.readResource({ uri })).contents[0] as { uri: string; mimeType: string; text: string }
  const format = await read('tale://automations/format')
  t.equal(format.mimeType, 'text/markdown')
  for (const type of ['set', 'condition', 'llm', 'http', 'action', 'approval', 'ask', 'agent', 'repeat', 'output']) {
    t.match(format.text, `| ${type} |`, `the format describes ${type} steps`)
  }
  const schema = await read('tale://automations/document-schema')
  t.same(JSON.parse(schema.text), documentJsonSchema())
  const example = JSON.parse((await read('tale://automations/example')).text)
  t.same(await callTool(client, 'automation_validate', { document: example }), { result: { valid: true, problems: [] }, isError: false },
    'the example is a valid document')

  const unknown = await client.readResource({ uri: 'tale://nothing' }).then(() => null, (e: unknown) => e)
  t.equal((unknown as McpError).code, -32002, 'an unknown resource')
})
