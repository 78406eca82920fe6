// /openapi.json, generated from the route declarations: the same schemas that check
// requests describe them here, so the document cannot drift from the running code.
import { toJsonSchema, toJsonSchemaDefs, type ConversionConfig } from '@valibot/to-json-schema'
import type { Route } from '../routes/route.ts'
import { wireSchema, type Schema } from '../transport/validation.ts'
import { components } from './components.ts'
import { errorEnvelope } from './errors.ts'
import { limits } from '../core/limits.ts'

type Json = Record<string, unknown>

const errorDescriptions: Record<number, string> = {
  400: 'Malformed request, unknown body key, invalid query, or organization slug required',
  401: 'Missing, invalid, expired or revoked API key; x-api-key used',
  403: 'Valid key lacking a capability, role or project access',
  404: 'Absent, invisible or belonging to another user',
  405: 'Unsupported verb on an existing route',
  408: 'Headers plus body not complete in time; the connection closes',
  409: 'State refuses the action, or a duplicate',
  413: 'Body too large',
  414: 'Request URI too long',
  429: 'Rate limited; wait Retry-After seconds',
  500: 'Internal error',
  503: 'A backing service is unavailable',
}

// Every authenticated operation can answer these, whatever its own refusals.
const transportErrors = [400, 401, 403, 405, 408, 413, 414, 429, 500]
// A key's X-Organization-Slug naming no organization answers 404 ORG_SLUG_INVALID on
// every operation a key calls (session routes name theirs by ?orgId=: 403 there).
const keyErrors = [404]
// A keyless route still checks its query (400 INVALID_QUERY), and every path is
// refused beyond the URL length (414).
const keylessErrors = [400, 414]

function conversion(typeMode: 'input' | 'output'): ConversionConfig {
  return {
    target: 'draft-2020-12', typeMode, errorMode: 'ignore', definitions: components(),
    overrideRef: ({ referenceId }) => `#/components/schemas/${referenceId}`,
    // Shapes whose checks do not convert (integers in query strings, objects that are not arrays).
    overrideSchema: ({ valibotSchema }) => wireSchema(valibotSchema as Schema),
  }
}

function jsonSchema(schema: Schema, typeMode: 'input' | 'output'): Json {
  const converted = toJsonSchema(schema, conversion(typeMode)) as Json
  delete converted.$schema
  // Named shapes live once under components/schemas.
  delete converted.$defs
  return converted
}

function parameters(schema: Schema | undefined, location: 'path' | 'query' | 'header'): Json[] {
  if (!schema) return []
  const converted = jsonSchema(schema, 'input')
  const properties = (converted.properties ?? {}) as Record<string, Json>
  const required = new Set((converted.required ?? []) as string[])
  return Object.entries(properties).map(([name, property]) => {
    const { description, ...schema } = property
    return {
      name, in: location, required: location === 'path' || required.has(name), schema,
      ...(description === undefined ? {} : { description }),
    }
  })
}

const versionHeader: Json = {
  'X-Service-Api-Version': { description: 'The API version that answered', schema: { type: 'string' } },
}

const commonHeaders: Json[] = [
  { $ref: '#/components/parameters/OrganizationSlug' },
  { $ref: '#/components/parameters/RequestId' },
]

function operationObject(route: Route, shared: boolean): Json {
  const responses: Json = {}
  const session = route.kind === 'operation' && route.auth === 'session'
  // A create-or-get answers 201 when it created, 200 with what was already there.
  const dynamic = route.kind === 'operation' && typeof route.status === 'function'
  const status = route.kind !== 'handler' && typeof route.status === 'number' ? route.status : dynamic ? 201 : 200
  const success: Json = { description: route.summary }
  if (status !== 204 && route.response) {
    const schema = jsonSchema(route.response, 'output')
    success.content = { 'application/json': { schema } }
  } else if (route.produces) {
    success.content = { [route.produces]: { schema: route.produces.startsWith('text/') ? { type: 'string' } : { type: 'string', format: 'binary' } } }
  }
  if (route.family) success['x-tale-pagination'] = route.family
  if (route.kind === 'operation' && route.location) {
    success.headers = { Location: { description: 'Path of the created resource', schema: { type: 'string' } } }
  }
  responses[String(status)] = success
  if (dynamic) responses['200'] = { ...success, description: `${route.summary} (already there: nothing created)`, headers: undefined }
  if (route.method === 'GET' && route.kind === 'operation') responses['304'] = { description: 'Unchanged since the ETag sent in If-None-Match' }
  const declared = route.kind === 'keyless' ? keylessErrors : session ? transportErrors : [...transportErrors, ...keyErrors]
  const errors = [...new Set([...declared, ...(route.errors ?? [])])].sort()
  for (const code of errors) {
    responses[String(code)] = { $ref: `#/components/responses/Error${code}` }
  }
  for (const [code, other] of Object.entries(route.otherResponses ?? {})) {
    responses[code] = { description: other.description, content: { 'application/json': { schema: jsonSchema(other.body, 'output') } } }
  }

  const operation: Json = {
    // An operation served on several paths (organization and project forms) is
    // named by each path unless its declaration names it.
    operationId: route.operationId
      ?? (route.kind === 'operation' && !shared ? camel(route.operation) : camel(`${route.method} ${route.path}`)),
    summary: route.summary,
    tags: [route.tag],
    parameters: [
      ...parameters(route.params, 'path'),
      ...parameters(route.query, 'query'),
      ...parameters(route.headers, 'header'),
      // A session route names its organization by ?orgId=, never by the slug header.
      ...(route.kind === 'keyless' ? []
        : session ? commonHeaders.filter((h) => h.$ref !== '#/components/parameters/OrganizationSlug') : commonHeaders),
    ],
    responses,
  }
  if (route.family) operation['x-tale-pagination'] = route.family
  if (route.kind === 'keyless') operation.security = route.security === 'metrics' ? [{ metricsBearer: [] }] : []
  if (session) operation.security = [{ session: [] }]
  if (route.body) {
    operation.requestBody = {
      required: route.method !== 'DELETE',
      content: { 'application/json': { schema: jsonSchema(route.body, 'input') } },
    }
  } else if (route.kind === 'keyless' && route.rawBody) {
    operation.requestBody = {
      required: false,
      description: 'Any bytes: JSON is handed on parsed, anything else as its UTF-8 text',
      content: { '*/*': { schema: {} } },
    }
  }
  if ((route.kind === 'operation' || route.kind === 'keyless') && route.bodyLimit) operation['x-tale-body-limit'] = route.bodyLimit
  if (route.kind === 'keyless' && route.versioned) {
    for (const response of Object.values(responses) as Json[]) {
      if (!('$ref' in response)) response.headers = { ...(response.headers as Json | undefined), ...versionHeader }
    }
  }
  return operation
}

function camel(text: string): string {
  const words = text.split(/[^A-Za-z0-9]+/).filter(Boolean)
  return words.map((w, i) => (i === 0 ? w.toLowerCase() : w[0]!.toUpperCase() + w.slice(1).toLowerCase())).join('')
}

export function openApiDocument(routes: Route[], options: { version: string }): Json {
  const paths: Record<string, Json> = {}
  const uses = new Map<string, number>()
  for (const route of routes) if (route.kind === 'operation') uses.set(route.operation, (uses.get(route.operation) ?? 0) + 1)
  for (const route of routes) {
    if (route.undocumented) continue
    const path = route.path.replace(/:([A-Za-z_]+)/g, '{$1}')
    const shared = route.kind === 'operation' && (uses.get(route.operation) ?? 0) > 1
    paths[path] = { ...(paths[path] ?? {}), [route.method.toLowerCase()]: operationObject(route, shared) }
  }
  const errorResponses: Record<string, Json> = {}
  for (const [code, description] of Object.entries(errorDescriptions)) {
    const response: Json = { description, content: { 'application/json': { schema: jsonSchema(errorEnvelope, 'output') } } }
    if (code === '429') response.headers = { 'Retry-After': { description: 'Whole seconds to wait', schema: { type: 'integer' } } }
    errorResponses[`Error${code}`] = response
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Tale automation, project and chat API',
      version: options.version,
      description: 'Server-to-server REST interface. Authenticate with Authorization: Bearer <API_KEY>; ' +
        'select the organization with X-Organization-Slug when the key holder belongs to several.',
      // Every limit of the service (db/limits.json) with its unit and meaning, rate budgets at RATE_LIMIT_SCALE 1.
      'x-tale-limits': limits,
    },
    // Relative: the reference's "Try it out" calls whichever origin served it.
    servers: [{ url: '/' }],
    security: [{ bearer: [] }],
    paths,
    components: {
      securitySchemes: {
        bearer: { type: 'http', scheme: 'bearer', description: 'An API key, sent whole' },
        metricsBearer: {
          type: 'http', scheme: 'bearer',
          description: 'The METRICS_BEARER_TOKEN of the deployment (the /metrics/* paths); while it is unset they answer 401',
        },
        session: {
          type: 'apiKey', in: 'cookie', name: 'tale_session',
          description: 'The app\'s sign-in (the /api/app routes); writes also need an Origin header of the service\'s own',
        },
      },
      parameters: {
        OrganizationSlug: {
          name: 'X-Organization-Slug', in: 'header', required: false, schema: { type: 'string' },
          description: 'Required when the key holder belongs to several organizations; case-insensitive',
        },
        RequestId: {
          name: 'X-Request-Id', in: 'header', required: false,
          schema: { type: 'string', pattern: '^[A-Za-z0-9_=-]{1,255}$' },
          description: 'Echoed back; replaced by a generated value when not acceptable',
        },
      },
      schemas: toJsonSchemaDefs(components(), conversion('output')),
      responses: errorResponses,
    },
  }
}
