// POST /api/v1/mcp: the Model Context Protocol over Streamable HTTP (JSON-RPC 2.0),
// with the official SDK, stateless: each request gets a server of its own, bound to
// the caller the request authenticated as. Tool refusals are JSON-RPC errors; the
// HTTP status stays 200.
import * as v from 'valibot'
import type { IncomingMessage } from 'node:http'
import { Server } from '@modelcontextprotocol/sdk/server/index.js'
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js'
import { CallToolRequestSchema, ErrorCode, ListToolsRequestSchema, McpError } from '@modelcontextprotocol/sdk/types.js'
import type { Route } from '../routes/route.ts'
import { issuesOf } from '../transport/validation.ts'
import { Refusal, toolList, tools } from './tools.ts'

/** JSON-RPC error code of a domain refusal; data carries the service's code and status. */
export const REFUSED = -32001

// The SDK's transport reads the raw header list, so both forms are replaced.
function overrideHeader(req: IncomingMessage, name: string, value: string): void {
  req.headers[name] = value
  const raw = req.rawHeaders
  for (let at = raw.length - 2; at >= 0; at -= 2) if (raw[at]!.toLowerCase() === name) raw.splice(at, 2)
  raw.push(name, value)
}

export function mcpRoutes(version: string): Route[] {
  return [{
    kind: 'handler', method: 'POST', path: '/api/v1/mcp', tag: 'MCP', operation: 'me',
    summary: 'Model Context Protocol (JSON-RPC 2.0 over Streamable HTTP): automation authoring tools',
    body: v.union([v.record(v.string(), v.unknown()), v.array(v.unknown())], 'must be a JSON-RPC message or batch'),
    handle: async (req, res, input, caller, call) => {
      const developer = Boolean((caller as { capabilities?: { developer?: boolean } } | null)?.capabilities?.developer)
      const server = new Server({ name: 'tale', version }, { capabilities: { tools: {} } })
      server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: toolList }))
      server.setRequestHandler(CallToolRequestSchema, async (request) => {
        const found = tools.find((t) => t.name === request.params.name)
        if (!found) throw new McpError(ErrorCode.InvalidParams, `Unknown tool "${request.params.name}".`)
        if (found.privileged && !developer) {
          throw new McpError(REFUSED, `${found.name} needs the developer capability.`, { code: 'ROLE_FORBIDDEN', status: 403 })
        }
        const parsed = v.safeParse(found.args, request.params.arguments ?? {})
        if (!parsed.success) {
          throw new McpError(ErrorCode.InvalidParams, `Invalid arguments for ${found.name}.`, { issues: issuesOf(parsed.issues) })
        }
        try {
          const { result, isError } = await found.run(parsed.output, { call, developer })
          return { content: [{ type: 'text', text: JSON.stringify(result) }], structuredContent: result, ...(isError ? { isError } : {}) }
        } catch (error) {
          if (error instanceof Refusal) {
            throw new McpError(REFUSED, error.message, { code: error.code, status: error.status, data: error.data })
          }
          throw error
        }
      })
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true })
      res.on('close', () => {
        void transport.close()
        void server.close()
      })
      await server.connect(transport)
      // The body is already read and checked as JSON, and JSON is answered whatever
      // the client accepts (no 406, no 415): tell the transport as much.
      overrideHeader(req, 'accept', 'application/json, text/event-stream')
      overrideHeader(req, 'content-type', 'application/json')
      await transport.handleRequest(req, res, input.body)
    },
  }]
}
