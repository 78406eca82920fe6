// POST /api/v1/mcp: the Model Context Protocol over Streamable HTTP (JSON-RPC 2.0),
// with the official SDK, stateless: each request gets a server of its own, bound to
// the caller the request authenticated as. It serves the authoring tools and, as
// resources, the document format. Refusals are JSON-RPC errors (the HTTP status stays
// 200); a request without a valid key is a 401 with a Bearer challenge.
import * as v from 'valibot'
import type { IncomingMessage } from 'node:http'
import { Server } from '@modelcontextprotocol/sdk/server/index.js'
import { Protocol } from '@modelcontextprotocol/sdk/shared/protocol.js'
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js'
import {
  CallToolRequestSchema, ErrorCode, ListResourcesRequestSchema, ListToolsRequestSchema, ReadResourceRequestSchema,
} from '@modelcontextprotocol/sdk/types.js'
import type { Route } from '../routes/route.ts'
import { issuesOf } from '../transport/validation.ts'
import { errorEnvelope } from '../openapi/errors.ts'
import type { Issue } from '../transport/errors.ts'
import { Refusal, toolList, tools } from './tools.ts'
import { resources } from './resources.ts'

/** JSON-RPC error code of a domain refusal; data carries the service's code and status. */
export const REFUSED = -32001
/** JSON-RPC error code of an unknown resource, as the MCP specification names it. */
export const RESOURCE_NOT_FOUND = -32002

/**
 * A JSON-RPC error as the SDK sends it (code, message, data). Not the SDK's McpError,
 * whose message already reads "MCP error <code>: ..." and which a client prefixes
 * once more.
 */
export class RpcError extends Error {
  constructor(readonly code: number, message: string, readonly data?: Record<string, unknown>) {
    super(message)
  }
}

function invalidParams(what: string, issues: Issue[]): RpcError {
  const described = issues.map((issue) => (issue.path && !issue.message.startsWith('unknown key') ? `${issue.path}: ${issue.message}` : issue.message))
  return new RpcError(ErrorCode.InvalidParams, `${what}: ${described.join('; ')}.`, { issues })
}

function checkParams<S extends v.GenericSchema>(schema: S, params: unknown, what: string): v.InferOutput<S> {
  const parsed = v.safeParse(schema, params ?? {})
  if (!parsed.success) throw invalidParams(what, issuesOf(parsed.issues))
  return parsed.output
}

// Not v.record, which takes an array for an empty object.
const namedArguments = v.custom<Record<string, unknown>>(
  (value) => typeof value === 'object' && value !== null && !Array.isArray(value), 'must be an object of named arguments')
const callParams = v.looseObject({ name: v.string('must name a tool'), arguments: v.optional(namedArguments) })
const readParams = v.looseObject({ uri: v.string('must be a resource URI') })
const listParams = v.looseObject({ cursor: v.optional(v.string('must be a cursor string')) })

type Method = typeof CallToolRequestSchema | typeof ListToolsRequestSchema | typeof ListResourcesRequestSchema | typeof ReadResourceRequestSchema

/**
 * Registers a method whose params this module checks itself. The SDK's checks would
 * answer a malformed params object with -32603 (internal error) and its raw issue
 * list; here only the method is matched, and the handler's own check answers -32602
 * with a readable message. Protocol's registration is used because Server's own
 * wraps tools/call in the same check.
 */
function handle(server: Server, method: Method, run: (params: unknown) => Promise<Record<string, unknown>>): void {
  const matchMethod = method.pick({ method: true }).loose()
  const register = Protocol.prototype.setRequestHandler as (this: Server, schema: unknown, handler: (request: { params?: unknown }) => Promise<unknown>) => void
  register.call(server, matchMethod, (request) => run(request.params))
}

// The SDK's transport reads the raw header list, so both forms are replaced.
function overrideHeader(req: IncomingMessage, name: string, value: string): void {
  req.headers[name] = value
  const raw = req.rawHeaders
  for (let at = raw.length - 2; at >= 0; at -= 2) if (raw[at]!.toLowerCase() === name) raw.splice(at, 2)
  raw.push(name, value)
}

// What the endpoint answers with 200: a JSON-RPC response, or one per message of a batch.
const jsonRpcResponse = v.strictObject({
  jsonrpc: v.literal('2.0'), id: v.nullable(v.union([v.string(), v.number()])), result: v.optional(v.unknown()),
  error: v.optional(v.strictObject({ code: v.pipe(v.number(), v.integer()), message: v.string(), data: v.optional(v.unknown()) })),
})
const jsonRpcAnswer = v.union([jsonRpcResponse, v.array(jsonRpcResponse)])

// A message the SDK cannot read as JSON-RPC (no jsonrpc member, an empty batch) is
// answered by the SDK itself with 400 and a JSON-RPC parse error, beside the service's
// own 400 envelope for a body that is not JSON at all.
const jsonRpcRefusal = v.strictObject({
  jsonrpc: v.literal('2.0'), id: v.null(),
  error: v.strictObject({ code: v.pipe(v.number(), v.integer()), message: v.string(), data: v.optional(v.unknown()) }),
})

export function mcpRoutes(version: string): Route[] {
  return [{
    kind: 'handler', method: 'POST', path: '/api/v1/mcp', tag: 'MCP', operation: 'me', challenge: 'Bearer',
    summary: 'Model Context Protocol (JSON-RPC 2.0 over Streamable HTTP): automation authoring tools, and the document format as resources',
    body: v.union([v.record(v.string(), v.unknown()), v.array(v.unknown())], 'must be a JSON-RPC message or batch'),
    response: jsonRpcAnswer,
    otherResponses: {
      400: { description: 'A body that is not JSON (the error envelope), or not a JSON-RPC message (a JSON-RPC parse error)',
        body: v.union([errorEnvelope, jsonRpcRefusal]) },
    },
    handle: async (req, res, input, caller, call) => {
      const developer = Boolean((caller as { capabilities?: { developer?: boolean } } | null)?.capabilities?.developer)
      const server = new Server({ name: 'tale', version }, { capabilities: { tools: {}, resources: {} } })
      handle(server, ListToolsRequestSchema, async (params) => {
        checkParams(listParams, params, 'Invalid tools/list request')
        return { tools: toolList }
      })
      handle(server, CallToolRequestSchema, async (params) => {
        const request = checkParams(callParams, params, 'Invalid tools/call request')
        const found = tools.find((t) => t.name === request.name)
        if (!found) throw new RpcError(ErrorCode.InvalidParams, `Unknown tool "${request.name}"; tools/list names the tools.`)
        if (found.privileged && !developer) {
          throw new RpcError(REFUSED, `${found.name} needs the developer capability.`, { code: 'ROLE_FORBIDDEN', status: 403 })
        }
        const args = checkParams(found.args, request.arguments, `Invalid arguments for ${found.name}`)
        try {
          const { result, isError } = await found.run(args, { call, developer })
          return { content: [{ type: 'text', text: JSON.stringify(result) }], structuredContent: result, ...(isError ? { isError } : {}) }
        } catch (error) {
          if (error instanceof Refusal) {
            throw new RpcError(REFUSED, error.message, { code: error.code, status: error.status, data: error.data })
          }
          throw error
        }
      })
      handle(server, ListResourcesRequestSchema, async (params) => {
        checkParams(listParams, params, 'Invalid resources/list request')
        return { resources: resources.map(({ text: _text, ...listed }) => listed) }
      })
      handle(server, ReadResourceRequestSchema, async (params) => {
        const { uri } = checkParams(readParams, params, 'Invalid resources/read request')
        const found = resources.find((r) => r.uri === uri)
        if (!found) throw new RpcError(RESOURCE_NOT_FOUND, `No resource "${uri}"; resources/list names the resources.`, { uri })
        return { contents: [{ uri, mimeType: found.mimeType, text: found.text() }] }
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
