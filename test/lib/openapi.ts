// Every JSON body a test receives is checked against what /openapi.json publishes for
// the operation that answered: a 2xx body against the declared success schema, an
// error body against the declared answer for its status or the error envelope. The
// document therefore cannot drift from what SQL and the server write.
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js'
import * as formats from 'ajv-formats'

type Json = Record<string, any>

// ajv-formats is CommonJS: under ESM its function is the default export.
const addFormats = formats.default as unknown as (ajv: Ajv2020) => Ajv2020

export class ResponseDrift extends Error {
  override name = 'ResponseDrift'
}

interface Template {
  path: string
  pattern: RegExp
  literals: number
}

export interface ResponseChecker {
  /** Throws ResponseDrift when the body is not what the document declares. */
  check: (method: string, url: string, status: number, contentType: string | null, body: unknown) => void
}

function newAjv(): Ajv2020 {
  const ajv = new Ajv2020({ strict: false, allErrors: true })
  addFormats(ajv)
  return ajv
}

/** Checks a value against one named schema of the document: null when it conforms, else the errors. */
export function componentCheck(document: Json, name: string): (value: unknown) => string | null {
  const ajv = newAjv()
  const validate = ajv.compile({ $ref: `#/components/schemas/${name}`, components: document.components })
  return (value) => (validate(value) ? null : ajv.errorsText(validate.errors, { dataVar: name }))
}

export function responseChecker(document: Json): ResponseChecker {
  const ajv = newAjv()
  const validators = new Map<string, ValidateFunction>()
  const templates: Template[] = Object.keys(document.paths).map((path) => ({
    path,
    pattern: new RegExp(`^${path.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{[^}]+\}/g, '[^/]+')}$`),
    literals: path.split('/').filter((segment) => segment && !segment.startsWith('{')).length,
  }))

  // Each schema is compiled beside the document's components, so its $refs resolve.
  const validator = (key: string, schema: Json): ValidateFunction => {
    let validate = validators.get(key)
    if (!validate) {
      validate = ajv.compile({ ...schema, components: document.components })
      validators.set(key, validate)
    }
    return validate
  }
  const resolve = (response: Json | undefined): Json | undefined => {
    const ref = response?.$ref as string | undefined
    return ref ? document.components.responses[ref.split('/').pop()!] : response
  }

  return {
    check(method, url, status, contentType, body) {
      if (method === 'HEAD' || body === undefined || !/\bjson\b/.test(contentType ?? '')) return
      // The service tolerates one trailing slash.
      const path = url.split('?')[0]!.replace(/(.)\/$/, '$1')
      const template = templates.filter((t) => t.pattern.test(path)).sort((a, b) => b.literals - a.literals)[0]
      const operation: Json | undefined = template ? document.paths[template.path][method.toLowerCase()] : undefined
      const label = `${method} ${path} answered ${status}`
      let key: string
      let schema: Json
      if (status >= 200 && status < 300) {
        if (!operation) throw new ResponseDrift(`${label} with JSON, but the document describes no such operation`)
        const declared = resolve(operation.responses[String(status)])?.content?.['application/json']?.schema
        if (!declared) throw new ResponseDrift(`${label} with JSON, but ${operation.operationId} declares no JSON body for ${status}`)
        schema = declared
        key = `${operation.operationId} ${status}`
      } else {
        schema = resolve(operation?.responses[String(status)])?.content?.['application/json']?.schema
          ?? { $ref: '#/components/schemas/Error' }
        key = `${operation?.operationId ?? 'any'} ${status}`
      }
      const validate = validator(key, schema)
      if (!validate(body)) {
        throw new ResponseDrift(`${label}, a body the document does not declare: ` +
          `${ajv.errorsText(validate.errors, { dataVar: 'body' })}\n${JSON.stringify(body).slice(0, 1500)}`)
      }
    },
  }
}
