// A service with the job worker, an organization with developers and members, and
// MCP clients that speak for them with the official SDK.
import type { Test } from 'tap'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { startTestService, type Response } from './service.ts'
import { acme } from './fixtures.ts'
import { eventually } from './wait.ts'
import type { SeedFile } from '../../server/admin/operations.ts'

export async function automationWorld(t: Test, options: { worker?: boolean; env?: Record<string, string>; seed?: Partial<SeedFile> } = {}) {
  const service = await startTestService(t, options.env ?? {}, undefined, { worker: options.worker ?? true })
  const seeded = await service.seed({
    ...acme(),
    projects: [
      { org: 'acme', name: 'Alpha', createdBy: 'olive@acme.test', access: [{ email: 'max@acme.test', level: 'read' }, { email: 'dev@acme.test', level: 'edit' }] },
      { org: 'acme', name: 'Beta', createdBy: 'olive@acme.test', access: [] },
    ],
    ...options.seed,
  })
  const key = (email: string) => seeded.users[email]!.keys.main!
  const as = (email: string) => ({
    key: key(email),
    get: (path: string, headers?: Record<string, string>) => service.request('GET', path, { key: key(email), headers }),
    post: (path: string, body?: unknown, headers?: Record<string, string>) => service.request('POST', path, { key: key(email), body, headers }),
    del: (path: string) => service.request('DELETE', path, { key: key(email) }),
    mcp: () => mcpClient(t, service.url, key(email)),
  })
  return {
    service, seeded, alpha: seeded.projects.Alpha!.id, beta: seeded.projects.Beta?.id as string,
    olive: as('olive@acme.test'), dev: as('dev@acme.test'), eddie: as('eddie@acme.test'), max: as('max@acme.test'),
  }
}

export async function mcpClient(t: Test, url: string, key: string): Promise<Client> {
  const client = new Client({ name: 'tale-tests', version: '1.0.0' })
  const transport = new StreamableHTTPClientTransport(new URL('/api/v1/mcp', url), {
    requestInit: { headers: { authorization: `Bearer ${key}` } },
  })
  await client.connect(transport)
  t.teardown(() => client.close())
  return client
}

/** A tool's structured result; throws the JSON-RPC error as the SDK raises it. */
export async function callTool(client: Client, name: string, args: Record<string, unknown>): Promise<{ result: any; isError: boolean }> {
  const answer = await client.callTool({ name, arguments: args })
  return { result: answer.structuredContent, isError: answer.isError === true }
}

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
