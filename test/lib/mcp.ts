// MCP clients that speak for an API key with the official SDK.
import type { Test } from 'tap'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'

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
