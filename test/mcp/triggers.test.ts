// Triggers over MCP: the same bindings as the REST routes, for agents that author and
// schedule automations in one conversation.
import t from 'tap'
import { McpError } from '@modelcontextprotocol/sdk/types.js'
import { automationWorld, callTool, simpleDocument } from '../lib/automations.ts'

t.test('trigger_set binds a schedule that trigger_get reads back with its health', async (t) => {
  const { dev } = await automationWorld(t, { worker: false })
  const client = await dev.mcp()
  await callTool(client, 'automation_create', { document: simpleDocument('ops/nightly') })
  const set = await callTool(client, 'trigger_set', { name: 'ops/nightly', trigger: { kind: 'schedule', cron: '0 3 * * *', timezone: 'Europe/Berlin' } })
  t.equal(set.isError, false)
  t.match(set.result, { name: 'ops/nightly', deployed: false, trigger: { kind: 'schedule', cron: '0 3 * * *', enabled: true } })
  const read = await callTool(client, 'trigger_get', { name: 'ops/nightly' })
  t.match(read.result, { triggers: [{ kind: 'schedule', timezone: 'Europe/Berlin', consecutiveFailures: 0, lastRunId: null }] })
})

t.test('a webhook bound over MCP answers its token once', async (t) => {
  const { dev } = await automationWorld(t, { worker: false })
  const client = await dev.mcp()
  await callTool(client, 'automation_create', { document: simpleDocument('ops/hook') })
  const bound = await callTool(client, 'trigger_set', { name: 'ops/hook', trigger: { kind: 'webhook' } })
  t.match(bound.result.token, /^[A-Za-z0-9_-]{43}$/)
  const again = await callTool(client, 'trigger_set', { name: 'ops/hook', trigger: { kind: 'webhook' } })
  t.equal(again.result.token, undefined, 'a rebind without rotation shows no token')
  const read = await callTool(client, 'trigger_get', { name: 'ops/hook' })
  t.notOk(JSON.stringify(read.result).includes(bound.result.token), 'no read carries the token')
})

t.test('a cron that is not five fields is refused with the service\'s code', async (t) => {
  const { dev } = await automationWorld(t, { worker: false })
  const client = await dev.mcp()
  await callTool(client, 'automation_create', { document: simpleDocument('ops/bad') })
  const error = await client.callTool({ name: 'trigger_set', arguments: { name: 'ops/bad', trigger: { kind: 'schedule', cron: '@daily' } } })
    .then(() => null, (e: unknown) => e)
  t.ok(error instanceof McpError)
  t.match((error as McpError).data, { code: 'AUTOMATION_TRIGGER_INVALID', status: 400 })
})

t.test('binding and removing need the developer capability; reading does not', async (t) => {
  const { dev, eddie } = await automationWorld(t, { worker: false })
  await callTool(await dev.mcp(), 'automation_create', { document: simpleDocument('ops/guarded') })
  await callTool(await dev.mcp(), 'trigger_set', { name: 'ops/guarded', trigger: { kind: 'event', event: 'project.created' } })
  const client = await eddie.mcp()
  for (const [tool, args] of [
    ['trigger_set', { name: 'ops/guarded', trigger: { kind: 'webhook' } }],
    ['trigger_remove', { name: 'ops/guarded' }],
  ] as const) {
    const error = await client.callTool({ name: tool, arguments: args }).then(() => null, (e: unknown) => e)
    t.match((error as McpError).data, { code: 'ROLE_FORBIDDEN', status: 403 }, tool)
  }
  t.match((await callTool(client, 'trigger_get', { name: 'ops/guarded' })).result, { triggers: [{ kind: 'event' }] })
  const removed = await callTool(await dev.mcp(), 'trigger_remove', { name: 'ops/guarded' })
  t.same(removed.result, { name: 'ops/guarded', removed: true })
  t.same((await callTool(client, 'trigger_get', { name: 'ops/guarded' })).result, { triggers: [] })
})
