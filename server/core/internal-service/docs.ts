// An internal service's /docs reference: swagger-ui-dist as installed, served by the
// service itself, with no outside requests; and the JSON Schema of a valibot schema
// for its OpenAPI document.
import { readFile } from 'node:fs/promises'
import { createRequire } from 'node:module'
import path from 'node:path'
import { toJsonSchema } from '@valibot/to-json-schema'
import * as v from 'valibot'

type Json = Record<string, unknown>

/** A valibot schema as JSON Schema 2020-12 (what OpenAPI 3.1 takes), for requests (input) or answers (output). */
export function jsonSchemaOf(value: v.GenericSchema, typeMode: 'input' | 'output'): Json {
  const converted = toJsonSchema(value, { target: 'draft-2020-12', typeMode, errorMode: 'ignore' }) as Json
  delete converted.$schema
  return converted
}

const require = createRequire(import.meta.url)
const swaggerUiDir = path.dirname(require.resolve('swagger-ui-dist/package.json'))

export const DOC_ASSETS: Record<string, string> = {
  'swagger-ui.css': 'text/css; charset=utf-8',
  'swagger-ui-bundle.js': 'text/javascript; charset=utf-8',
  'swagger-ui-standalone-preset.js': 'text/javascript; charset=utf-8',
  'favicon-32x32.png': 'image/png',
}

const assetCache = new Map<string, Buffer>()

/** One swagger-ui-dist file of DOC_ASSETS, or null for any other name. */
export async function docAsset(name: string): Promise<{ content: Buffer; type: string } | null> {
  const type = DOC_ASSETS[name]
  if (!type) return null
  let content = assetCache.get(name)
  if (!content) {
    content = await readFile(path.join(swaggerUiDir, name))
    assetCache.set(name, content)
  }
  return { content, type }
}

const escapeHtml = (text: string) => text.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]!)

export const docsPage = (title: string) => `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>${escapeHtml(title)}</title>
  <link rel="stylesheet" href="/docs/assets/swagger-ui.css">
  <link rel="icon" type="image/png" href="/docs/assets/favicon-32x32.png">
</head>
<body>
  <div id="reference"></div>
  <script src="/docs/assets/swagger-ui-bundle.js"></script>
  <script src="/docs/assets/swagger-ui-standalone-preset.js"></script>
  <script src="/docs/init.js"></script>
</body>
</html>
`

// validatorUrl null: the reference must not call out to a public validator.
export const DOCS_INIT = `window.ui = SwaggerUIBundle({
  url: '/openapi.json', dom_id: '#reference', deepLinking: true, validatorUrl: null,
  presets: [SwaggerUIBundle.presets.apis, SwaggerUIStandalonePreset], layout: 'StandaloneLayout'
})
`

const json = (body: Json) => ({ 'application/json': { schema: body } })
const errorRef = (description: string) => ({ description, content: json({ $ref: '#/components/schemas/Error' }) })

/** The envelope of every refusal of an internal service. */
export const errorEnvelope = v.strictObject({ error: v.string(), code: v.string(), data: v.record(v.string(), v.unknown()) })

/**
 * The paths every internal service has (commonRoutes in app.ts) and the components
 * they and its own paths refer to, for its OpenAPI document.
 */
export function commonDocument(metricsName: string, tokenVariable: string): { paths: Json; components: Json } {
  return {
    paths: {
      '/health': {
        get: {
          operationId: 'health', summary: 'The service answers and its database does', security: [],
          responses: {
            200: { description: 'Healthy', content: json(jsonSchemaOf(v.strictObject({ status: v.literal('ok') }), 'output')) },
            503: { description: 'The database does not answer', content: json(jsonSchemaOf(v.strictObject({ status: v.literal('unavailable') }), 'output')) },
          },
        },
      },
      [`/metrics/${metricsName}`]: {
        get: {
          operationId: 'metrics', summary: 'Prometheus metrics; bearer METRICS_BEARER_TOKEN (401 while it is unset)',
          security: [{ metricsBearer: [] }],
          responses: {
            200: { description: 'Prometheus text format', content: { 'text/plain': { schema: { type: 'string' } } } },
            401: errorRef('UNAUTHORIZED: METRICS_BEARER_TOKEN is unset or not the bearer token sent'),
            500: errorRef('INTERNAL_ERROR'),
          },
        },
      },
      '/openapi.json': {
        get: {
          operationId: 'openApiDocument', summary: 'This document', security: [],
          responses: { 200: { description: 'OpenAPI 3.1', content: json({ type: 'object', required: ['openapi', 'info', 'paths'] }) } },
        },
      },
      '/docs': {
        get: {
          operationId: 'reference', summary: 'Interactive reference (HTML)', security: [],
          responses: { 200: { description: 'HTML', content: { 'text/html': { schema: { type: 'string' } } } } },
        },
      },
    },
    components: {
      schemas: { Error: jsonSchemaOf(errorEnvelope, 'output') },
      securitySchemes: {
        bearer: { type: 'http', scheme: 'bearer', description: `${tokenVariable}; the service is open (and listens on loopback only) when it is unset.` },
        metricsBearer: { type: 'http', scheme: 'bearer', description: 'METRICS_BEARER_TOKEN.' },
      },
    },
  }
}
