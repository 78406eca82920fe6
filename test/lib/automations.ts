// Automation documents for tests, deploying them through MCP, and waiting for runs.
import type { Test } from 'tap'
import type { Client } from '@modelcontextprotocol/sdk/client/index.js'
import type { Response } from './service.ts'
import { eventually } from './wait.ts'
import { callTool } from './mcp.ts'
import { world, type WorldOptions } from './world.ts'

export { callTool, mcpClient } from './mcp.ts'

/** world() with the job worker on unless asked otherwise (the name the MCP and operations tests import). */
export const automationWorld = (t: Test, options: WorldOptions = {}) => world(t, { worker: true, ...options })

/** A minimal document: set a value, map it to the output. */
export function simpleDocument(name: string, extra: Record<string, unknown> = {}) {
  return {
    name,
    description: 'Greets',
    inputs: { type: 'object', properties: { who: { type: 'string' } }, required: ['who'] },
    steps: [
      { slug: 'greet', type: 'set', config: { values: { greeting: 'Hello {{ input.who }}' } }, next: { success: 'end' } },
      { slug: 'end', type: 'output', config: { mapping: { greeting: '{{ steps.greet.output.greeting }}' } } },
    ],
    tests: [{ name: 'greets', input: { who: 'Ada' }, expect: { status: 'completed', output: { greeting: 'Hello Ada' } } }],
    ...extra,
  }
}

/** A document that takes no inputs, so every trigger start is accepted: two set-and-output steps. */
export const inputlessDocument = (name: string) => ({
  name,
  steps: [
    { slug: 'mark', type: 'set', config: { values: { fired: true } }, next: { success: 'end' } },
    { slug: 'end', type: 'output', config: { mapping: { fired: '{{ steps.mark.output.fired }}' } } },
  ],
})

/** An automation's REST path from its name (a slash in the name is written __). */
export const automationPath = (name: string) => `/api/v1/automations/${name.replace('/', '__')}`

/** Creates and deploys a document through MCP as a developer. */
export async function deploy(client: Client, document: Record<string, unknown>): Promise<void> {
  const created = await callTool(client, 'automation_create', { document })
  if (created.isError) throw new Error(`create failed: ${JSON.stringify(created.result)}`)
  await callTool(client, 'automation_deploy', { name: document.name })
}

/** A run once done says so, or once it has finished (for the test to judge). */
export function waitForRun(get: (path: string) => Promise<Response>, runId: string,
  done: (run: any) => boolean = (r) => !['queued', 'running'].includes(r.status)): Promise<any> {
  return eventually(async () => (await get(`/api/v1/runs/${runId}`)).body,
    (run) => done(run) || ['completed', 'failed', 'cancelled'].includes(run?.status) || run?.code !== undefined)
}
