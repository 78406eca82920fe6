// What live steps reach: the organization's models (llm), outbound HTTP (http) and
// platform writes (action).
import type { Connectors, RunContext, StepOutcome } from './engine.ts'
import type { FailureCode } from '../automations/document.ts'
import { completeChat, type CatalogModel } from '../models/provider.ts'
import { readAnswer } from '../models/answer.ts'
import { readCapped } from '../http-body.ts'

export type { CatalogModel }

const HTTP_DEFAULT_TIMEOUT_MS = 30_000
/** Response bodies kept in a run's trace and step output. */
const HTTP_MAX_BODY_BYTES = 1024 * 1024

const fail = (failureCode: Extract<StepOutcome, { kind: 'fail' }>['failureCode'], detail: string): StepOutcome =>
  ({ kind: 'fail', failureCode, detail })

/** A platform write (task.create, task.comment) performed for a run by whoever holds the database. */
export type PlatformAction = (action: string, params: Record<string, unknown>, context: RunContext) => Promise<StepOutcome>

/** The agent a step names, checked for what running it needs (app.worker_agent_check). */
export type AgentCheck = (agentRef: string, projectRef: string | null, context: RunContext) =>
  Promise<{ agentId: string; agentName: string } | { failureCode: FailureCode; detail: string }>

export function liveConnectors(models: CatalogModel[], platform: PlatformAction, checkAgent: AgentCheck): Connectors {
  return {
    agent: async (config, context) => {
      const checked = await checkAgent(String(config.agent), typeof config.projectId === 'string' ? config.projectId : null, context)
      if ('failureCode' in checked) return fail(checked.failureCode, checked.detail)
      const prompt = typeof config.prompt === 'string' ? config.prompt : JSON.stringify(config.prompt)
      const answerFormat = { outputFormat: config.outputFormat ?? 'text', ...(config.outputSchema !== undefined ? { outputSchema: config.outputSchema } : {}) }
      return { kind: 'park', waitingFor: 'agent', wait: { agentId: checked.agentId, agentName: checked.agentName, prompt, answerFormat } }
    },
    llm: (config) => callModel(models, config),
    http: (config) => callHttp(config),
    action: (config, context) => {
      const params = config.params ?? {}
      if (typeof params !== 'object' || Array.isArray(params)) return Promise.resolve(fail('node_error', 'the action\'s params must be an object'))
      return platform(String(config.action), params as Record<string, unknown>, context)
    },
  }
}

async function callModel(models: CatalogModel[], config: Record<string, unknown>): Promise<StepOutcome> {
  const wanted = String(config.model)
  const model = models.find((m) => m.id === wanted && (config.providerSlug === undefined || m.providerSlug === config.providerSlug))
  if (!model) return fail('model_not_found', `no model "${wanted}" in the organization's catalog`)
  const json = config.outputFormat === 'json'
  const answer = await completeChat(model, {
    system: typeof config.system === 'string' ? config.system : undefined,
    prompt: typeof config.prompt === 'string' ? config.prompt : JSON.stringify(config.prompt),
    json,
  })
  // An llm step is never stopped from outside, so no call of it ends 'cancelled'.
  if (!answer.ok) return fail(answer.failureCode === 'cancelled' ? 'connector_error' : answer.failureCode, answer.detail)
  const read = readAnswer(answer.text, json, config.outputSchema)
  return read.ok ? { kind: 'port', port: 'success', output: read.output } : fail('llm_output_invalid', read.detail)
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

export type { RunContext }
