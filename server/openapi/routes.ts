// /openapi.json and /docs, an interactive reference served entirely from local assets.
import { readFile } from 'node:fs/promises'
import { createRequire } from 'node:module'
import path from 'node:path'
import * as v from 'valibot'
import type { Reply, Route } from '../routes/route.ts'
import { openApiDocument } from './document.ts'

const require = createRequire(import.meta.url)
const swaggerUiDir = path.dirname(require.resolve('swagger-ui-dist/package.json'))

const assets: Record<string, string> = {
  'swagger-ui.css': 'text/css; charset=utf-8',
  'swagger-ui-bundle.js': 'text/javascript; charset=utf-8',
  'swagger-ui-standalone-preset.js': 'text/javascript; charset=utf-8',
  'favicon-32x32.png': 'image/png',
}

const page = `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>API reference</title>
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
const init = `window.ui = SwaggerUIBundle({
  url: '/openapi.json', dom_id: '#reference', deepLinking: true, validatorUrl: null,
  presets: [SwaggerUIBundle.presets.apis, SwaggerUIStandalonePreset], layout: 'StandaloneLayout'
})
`

export function documentationRoutes(allRoutes: () => Route[], options: { version: string }): Route[] {
  let document: Record<string, unknown> | undefined
  const cache = new Map<string, Buffer>()
  const asset = async (name: string): Promise<Reply> => {
    const type = assets[name]
    if (!type) return { status: 404, body: { error: 'Not found.', code: 'NOT_FOUND', data: {} } }
    let content = cache.get(name)
    if (!content) {
      content = await readFile(path.join(swaggerUiDir, name))
      cache.set(name, content)
    }
    return { status: 200, raw: content, contentType: type }
  }
  return [
    {
      kind: 'keyless', method: 'GET', path: '/openapi.json', tag: 'Reference',
      summary: 'This instance\'s OpenAPI document', operationId: 'getOpenApiDocument',
      response: v.looseObject({ openapi: v.literal('3.1.0'), info: v.record(v.string(), v.unknown()), paths: v.record(v.string(), v.unknown()) }),
      handle: async () => {
        document ??= openApiDocument(allRoutes(), options)
        return { status: 200, body: document }
      },
    },
    {
      kind: 'keyless', method: 'GET', path: '/docs', tag: 'Reference', summary: 'Interactive API reference (HTML)',
      operationId: 'getReference', produces: 'text/html',
      handle: async () => ({ status: 200, raw: page, contentType: 'text/html; charset=utf-8' }),
    },
    {
      kind: 'keyless', method: 'GET', path: '/docs/init.js', tag: 'Reference', summary: 'Reference start-up script', undocumented: true,
      handle: async () => ({ status: 200, raw: init, contentType: 'text/javascript; charset=utf-8' }),
    },
    {
      kind: 'keyless', method: 'GET', path: '/docs/assets/:name', tag: 'Reference', summary: 'Reference assets', undocumented: true,
      params: v.strictObject({ name: v.string() }),
      handle: async (req) => asset((req as { params?: Record<string, string> }).params?.name ?? ''),
    },
  ]
}
