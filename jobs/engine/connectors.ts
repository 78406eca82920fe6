// What live steps reach: the organization's models (llm), outbound HTTP (http) and
// platform writes (action).
import { schemaViolations } from '../../server/automations/document.ts'
import type { Connectors, RunContext, StepOutcome } from './engine.ts'

export interface CatalogModel {
  id: string
  providerSlug: string
  maxOutputTokens: number | null
  baseUrl: string | null
  apiKey: string | null
}

const LLM_TIMEOUT_MS = 60_000
const HTTP_DEFAULT_TIMEOUT_MS = 30_000
/** Response bodies kept in a run's trace and step output. */
const HTTP_MAX_BODY_BYTES = 1024 * 1024

const fail = (failureCode: Extract<StepOutcome, { kind: 'fail' }>['failureCode'], detail: string): StepOutcome =>
  ({ kind: 'fail', failureCode, detail })

export function liveConnectors(models: CatalogModel[]): Connectors {
  return {
    llm: (config) => callModel(models, config),
    http: (config) => callHttp(config),
    action: async (config) =>
      // The task and contact families are not part of this deployment yet; a run
      // that needs them fails plainly rather than pretending to have written.
      fail('node_error', `the action ${String(config.action)} is not available in this deployment`),
  }
}

async function callModel(models: CatalogModel[], config: Record<string, unknown>): Promise<StepOutcome> {
  const wanted = String(config.model)
  const model = models.find((m) => m.id === wanted && (config.providerSlug === undefined || m.providerSlug === config.providerSlug))
  if (!model) return fail('model_not_found', `no model "${wanted}" in the organization's catalog`)
  const prompt = typeof config.prompt === 'string' ? config.prompt : JSON.stringify(config.prompt)
  const system = typeof config.system === 'string' ? config.system : undefined
  const json = config.outputFormat === 'json'

  let text: string
  if (model.providerSlug === 'local') {
    // The built-in deterministic model answers with its prompt.
    text = prompt
  } else {
    if (!model.apiKey) return fail('missing_api_key', `the provider "${model.providerSlug}" has no API key`)
    let response: Response
    try {
      response = await fetch(`${String(model.baseUrl).replace(/\/$/, '')}/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${model.apiKey}` },
        body: JSON.stringify({
          model: model.id,
          messages: [...(system ? [{ role: 'system', content: system }] : []), { role: 'user', content: prompt }],
          ...(model.maxOutputTokens ? { max_tokens: model.maxOutputTokens } : {}),
          ...(json ? { response_format: { type: 'json_object' } } : {}),
        }),
        signal: AbortSignal.timeout(LLM_TIMEOUT_MS),
      })
    } catch (error) {
      return fail('connector_error', `the model provider did not answer: ${(error as Error).message}`)
    }
    const body = (await readCapped(response, HTTP_MAX_BODY_BYTES)).toString('utf8')
    if (response.status === 401 || response.status === 403) return fail('auth_error', `the model provider refused the key (${response.status})`)
    if (response.status === 402 || (response.status === 429 && /quota|credit|billing/i.test(body))) {
      return fail('credit_exhausted', `the model provider reports no credit left (${response.status})`)
    }
    if (response.status === 404) return fail('model_not_found', `the provider does not know the model "${model.id}"`)
    if (!response.ok) return fail('connector_error', `the model provider answered ${response.status}`)
    try {
      text = String((JSON.parse(body) as { choices: { message: { content: string } }[] }).choices[0]!.message.content ?? '')
    } catch {
      return fail('connector_error', 'the model provider\'s answer has no message')
    }
  }
  if (!json) return { kind: 'port', port: 'success', output: text }
  let parsed: unknown
  try {
    parsed = JSON.parse(text)
  } catch {
    return fail('llm_output_invalid', 'the model\'s answer is not JSON')
  }
  if (config.outputSchema !== undefined) {
    const problems = schemaViolations(config.outputSchema, parsed, 'output')
    if (problems.length > 0) {
      return fail('llm_output_invalid', `the model's answer does not match outputSchema: ${problems.map((p) => `${p.path} ${p.message}`).join('; ')}`)
    }
  }
  return { kind: 'port', port: 'success', output: parsed }
}

async function callHttp(config: Record<string, unknown>): Promise<StepOutcome> {
  const method = String(config.method ?? 'GET')
  let url: URL
  try {
    url = new URL(String(config.url))
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error('only http and https')
  } catch (error) {
    return fail('node_error', `the url ${JSON.stringify(config.url)} is not usable: ${(error as Error).message}`)
  }
  const headers: Record<string, string> = {}
  for (const [name, value] of Object.entries((config.headers as Record<string, unknown> | undefined) ?? {})) headers[name] = String(value)
  let body: string | undefined
  if (config.body !== undefined && method !== 'GET' && method !== 'HEAD') {
    body = typeof config.body === 'string' ? config.body : JSON.stringify(config.body)
    if (typeof config.body !== 'string' && !Object.keys(headers).some((h) => h.toLowerCase() === 'content-type')) {
      headers['content-type'] = 'application/json'
    }
  }
  let response: Response
  try {
    response = await fetch(url, {
      method, headers, body, redirect: 'follow',
      signal: AbortSignal.timeout(Number(config.timeoutMs ?? HTTP_DEFAULT_TIMEOUT_MS)),
    })
  } catch (error) {
    return fail('connector_error', `${method} ${url.origin}${url.pathname} failed: ${(error as Error).message}`)
  }
  const text = (await readCapped(response, HTTP_MAX_BODY_BYTES)).toString('utf8')
  let parsed: unknown = text
  if (/json/i.test(response.headers.get('content-type') ?? '')) {
    try {
      parsed = JSON.parse(text)
    } catch {
      parsed = text
    }
  }
  if (response.status === 401 || response.status === 403) {
    return fail('auth_error', `${method} ${url.origin}${url.pathname} was refused (${response.status})`)
  }
  if (!response.ok) return fail('connector_error', `${method} ${url.origin}${url.pathname} answered ${response.status}`)
  const output = { status: response.status, headers: Object.fromEntries(response.headers), body: parsed }
  const effects = method === 'GET' || method === 'HEAD' ? [] : [{ step: '', type: 'http', method, url: `${url.origin}${url.pathname}`, status: response.status }]
  return { kind: 'port', port: 'success', output, effects }
}

/** At most limit bytes of a response body; the rest is never read. */
async function readCapped(response: Response, limit: number): Promise<Buffer> {
  if (!response.body) return Buffer.alloc(0)
  const chunks: Buffer[] = []
  let size = 0
  const reader = response.body.getReader()
  try {
    for (;;) {
      const { done, value } = await reader.read()
      if (done) break
      chunks.push(Buffer.from(value))
      size += value.byteLength
      if (size >= limit) break
    }
  } finally {
    await reader.cancel().catch(() => {})
  }
  return Buffer.concat(chunks).subarray(0, limit)
}

export type { RunContext }
