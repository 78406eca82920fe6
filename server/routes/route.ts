// One declaration per operation feeds the router, the shape checks and (from the
// same fields) the OpenAPI document.
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { Schema } from '../transport/validation.ts'

export type Method = 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE'
export type Family = 'keyset' | 'offset' | 'unpaginated'
/** Narrower budgets a route draws on besides the general one. */
export type Bucket = 'start' | 'files'

export interface Input {
  params: Record<string, unknown>
  query: Record<string, unknown>
  body: unknown
  /** The declared request headers (lower-case names), when the route reads any. */
  headers?: Record<string, unknown>
}

export interface Reply {
  status: number
  /** A JSON body. */
  body?: unknown
  /** A non-JSON body (HTML, scripts, assets), sent with contentType. */
  raw?: Buffer | string
  contentType?: string
  headers?: Record<string, string>
}

interface Common {
  method: Method
  path: string
  summary: string
  tag: string
  params?: Schema
  query?: Schema
  body?: Schema
  /** Request headers the operation reads (an object schema over lower-case names). */
  headers?: Schema
  /** Largest accepted body in bytes; 1 MiB when unset. */
  bodyLimit?: number
  /** The success response's body, for the OpenAPI document. */
  response?: Schema
  /** A success body that is not JSON (file bytes): its media type, for the OpenAPI document. */
  produces?: string
  /** Coded refusals this operation may answer, for the OpenAPI document. */
  errors?: number[]
  /** Answers other than success and the error envelope (a health check's 503), for the OpenAPI document. */
  otherResponses?: Record<number, { description: string; body: Schema }>
  family?: Family
  /** The operation's name in the OpenAPI document, where the SQL operation's name is shared by several paths. */
  operationId?: string
  /** Left out of the OpenAPI document (the reference's own scripts and assets). */
  undocumented?: boolean
}

/** An operation of the API: authenticated, one SQL function call. */
export interface OperationRoute extends Common {
  kind: 'operation'
  operation: string
  /** Who may call it: an API key (the default) or a person signed in to the app (its session cookie). */
  auth?: 'key' | 'session'
  buckets?: Bucket[]
  /** The success status, fixed or read from the body (200 or 201 for a create-or-get). */
  status?: number | ((body: Record<string, any>) => number)
  /** Maps validated input to the SQL function's argument. */
  args?: (input: Input) => Record<string, unknown>
  /** The created resource's path; undefined when nothing was created. */
  location?: (body: Record<string, any>, input: Input) => string | undefined
  /**
   * What the server itself observes before the call (the object store's answers),
   * passed to the SQL function as `observed` so the rules there decide with it.
   * Never client input: body schemas are strict and `observed` is added last.
   */
  observe?: (input: Input, caller: Caller) => Promise<Record<string, unknown>>
  /** Writes the success response itself from the SQL body (file downloads). */
  respond?: (body: Record<string, any>, req: IncomingMessage, res: ServerResponse) => Promise<void>
}

/** Who an authenticated request acts as, for what the server observes on its behalf. */
export interface Caller { organizationId: string }

/** Runs an operation as the caller already authenticated, without charging again. */
export type CallAs = (operation: string, args: Record<string, unknown>) => Promise<{
  body: string | null
  error: { code: string; status: number; message: string; data?: Record<string, unknown> } | null
}>

/**
 * An authenticated endpoint with a protocol of its own (MCP): authenticated and
 * charged once by `operation`, whose body it receives, then free to run further
 * operations as the same caller.
 */
export interface HandlerRoute extends Common {
  kind: 'handler'
  /** The operation that authenticates the request and whose body the handler gets. */
  operation: string
  /** The WWW-Authenticate challenge sent with a 401, for a protocol whose clients expect one. */
  challenge?: string
  handle: (req: IncomingMessage, res: ServerResponse, input: Input, caller: unknown, call: CallAs) => Promise<void>
}

/** A keyless endpoint served by the server itself (health, status, schema, docs, webhook deliveries). */
export interface KeylessRoute extends Common {
  kind: 'keyless'
  /** The body is handed over as the bytes received (input.body, a Buffer), never parsed. */
  rawBody?: boolean
  /** Every answer carries X-Service-Api-Version, refusals included. */
  versioned?: boolean
  /**
   * The path itself is a secret (a webhook URL holds its token): every other verb,
   * HEAD and OPTIONS included, and every path beneath it answer one 404 with no Allow,
   * never 405, so no answer tells that the path exists.
   */
  opaque?: boolean
  /** The success status, for the OpenAPI document; 200 when unset. */
  status?: number
  /** Asks for a bearer of its own, checked by its handler: the metrics' METRICS_BEARER_TOKEN. */
  security?: 'metrics'
  handle: (req: IncomingMessage, input: Input) => Promise<Reply>
}

export type Route = OperationRoute | HandlerRoute | KeylessRoute
