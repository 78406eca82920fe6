// An internal service's /docs reference: swagger-ui-dist as installed, served by the
// service itself, with no outside requests; and the JSON Schema of a valibot schema
// for its OpenAPI document.
import { readFile } from 'node:fs/promises'
import { createRequire } from 'node:module'
import path from 'node:path'
import { toJsonSchema } from '@valibot/to-json-schema'
import type * as v from 'valibot'

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
