// The model provider client: one chat completion against an organization's catalog
// model, either the built-in deterministic `local` model or any OpenAI-compatible
// endpoint. Failures come back typed with the run failure codes they map to, so the
// run engine, chat generation and agents read a provider's answer the same way.
import { readCapped } from '../http-body.ts'

export interface CatalogModel {
  id: string
  providerSlug: string
  maxOutputTokens: number | null
  baseUrl: string | null
  apiKey: string | null
}

export interface ChatRequest {
  system?: string | undefined
  prompt: string
  /** Asks the provider for a JSON object (response_format json_object). */
  json?: boolean
}

export type ProviderFailure = 'model_not_found' | 'missing_api_key' | 'connector_error' | 'auth_error' | 'credit_exhausted'

export type ChatAnswer = { ok: true; text: string } | { ok: false; failureCode: ProviderFailure; detail: string }

const LLM_TIMEOUT_MS = 60_000
/** The largest provider answer read. */
const MAX_ANSWER_BYTES = 1024 * 1024

export async function completeChat(model: CatalogModel, request: ChatRequest): Promise<ChatAnswer> {
  const fail = (failureCode: ProviderFailure, detail: string): ChatAnswer => ({ ok: false, failureCode, detail })
  // The built-in deterministic model answers with its prompt.
  if (model.providerSlug === 'local') return { ok: true, text: request.prompt }
  if (!model.apiKey) return fail('missing_api_key', `the provider "${model.providerSlug}" has no API key`)
  let response: Response
  try {
    response = await fetch(`${String(model.baseUrl).replace(/\/$/, '')}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${model.apiKey}` },
      body: JSON.stringify({
        model: model.id,
        messages: [...(request.system ? [{ role: 'system', content: request.system }] : []), { role: 'user', content: request.prompt }],
        ...(model.maxOutputTokens ? { max_tokens: model.maxOutputTokens } : {}),
        ...(request.json ? { response_format: { type: 'json_object' } } : {}),
      }),
      signal: AbortSignal.timeout(LLM_TIMEOUT_MS),
    })
  } catch (error) {
    return fail('connector_error', `the model provider did not answer: ${(error as Error).message}`)
  }
  const body = (await readCapped(response, MAX_ANSWER_BYTES)).toString('utf8')
  if (response.status === 401 || response.status === 403) return fail('auth_error', `the model provider refused the key (${response.status})`)
  if (response.status === 402 || (response.status === 429 && /quota|credit|billing/i.test(body))) {
    return fail('credit_exhausted', `the model provider reports no credit left (${response.status})`)
  }
  if (response.status === 404) return fail('model_not_found', `the provider does not know the model "${model.id}"`)
  if (!response.ok) return fail('connector_error', `the model provider answered ${response.status}`)
  try {
    return { ok: true, text: String((JSON.parse(body) as { choices: { message: { content: string } }[] }).choices[0]!.message.content ?? '') }
  } catch {
    return fail('connector_error', 'the model provider\'s answer has no message')
  }
}
