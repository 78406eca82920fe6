// The MCP endpoint driven by the SDK's own client: authoring tools, versions, tests,
// deployment, and refusals as JSON-RPC errors.
import t from 'tap'
import { McpError } from '@modelcontextprotocol/sdk/types.js'
import { automationWorld, callTool, simpleDocument } from '../lib/automations.ts'

t.test('tools are listed and authoring works end to end', async (t) => {
  const { olive, dev } = await automationWorld(t, { worker: false })
  const client = await dev.mcp()
  const { tools } = await client.listTools()
  t.same(tools.map((tool) => tool.name).sort(), ['automation_create', 'automation_deploy', 'automation_get', 'automation_list',
    'automation_save', 'automation_test', 'automation_validate', 'run_decide_approval'])
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

t.test('validation reports every problem with a JSON path', async (t) => {
  const { dev } = await automationWorld(t, { worker: false })
  const client = await dev.mcp()
  const broken: { name: string; inputs: unknown; steps: Record<string, unknown>[]; tests: unknown[] } = {
    name: 'ops/broken',
    inputs: { type: 'object', properties: { n: { type: 'nonsense' } } },
    steps: [
      { slug: 'a', type: 'set', config: { values: { x: '{{ bogus.value }}' } }, next: { success: 'missing', nope: 'b' } },
      { slug: 'b', type: 'teleport' },
      { slug: 'c', type: 'condition', config: { expression: 'input.x > 1' }, next: { true: 'a' } },
      { slug: 'a', type: 'output', config: { mapping: {} } },
    ],
    tests: [{ name: 't', mocks: { ghost: 1 } }],
  }
  const first = await callTool(client, 'automation_validate', { document: broken })
  t.equal(first.isError, true)
  t.same(first.result.problems.map((p: { path: string }) => p.path), ['steps.1.type'], 'shape problems come first')

  broken.steps[1] = { slug: 'b', type: 'set', config: { values: {} } }
  const second = await callTool(client, 'automation_validate', { document: broken })
  const paths = second.result.problems.map((p: { path: string }) => p.path)
  for (const path of ['steps.3.slug', 'inputs', 'steps.0.next.success', 'steps.0.next.nope', 'steps.0.config.values',
    'steps.2', 'tests.0.mocks.ghost']) t.ok(paths.includes(path), `reports ${path}`)
  t.match(second.result.problems.find((p: { path: string }) => p.path === 'steps.0.config.values').message, /unknown template namespace "bogus"/)
  t.match(second.result.problems.find((p: { path: string }) => p.path === 'steps.0.next.nope').message, /unknown port/)

  const good = await callTool(client, 'automation_validate', { document: simpleDocument('ops/fine') })
  t.same(good.result, { valid: true, problems: [] })
  const refused = await callTool(client, 'automation_create', { document: broken })
  t.equal(refused.isError, true, 'an invalid document is not stored')
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

  const unknownAutomation = await (await dev.mcp()).callTool({ name: 'automation_get', arguments: { name: 'nope' } }).then(() => null, (e: unknown) => e)
  t.match((unknownAutomation as McpError).data, { code: 'AUTOMATION_NOT_FOUND', status: 404 })
  const badArgs = await (await dev.mcp()).callTool({ name: 'automation_get', arguments: { name: 'x', extra: 1 } }).then(() => null, (e: unknown) => e)
  t.equal((badArgs as McpError).code, -32602, 'invalid arguments are InvalidParams')
})

t.test('the endpoint authenticates like every API route', async (t) => {
  const { service } = await automationWorld(t, { worker: false })
  const anonymous = await service.request('POST', '/api/v1/mcp', { body: { jsonrpc: '2.0', id: 1, method: 'tools/list' } })
  t.equal(anonymous.status, 401)
  t.equal(anonymous.body.code, 'UNAUTHORIZED')
})
