// The model provider client: chat completions against an organization's catalog model,
// either the built-in deterministic `local` model or any OpenAI-compatible endpoint
// through the official `openai` client, streamed. Chat generation, llm steps and agents
// all call it, and read its failures the same way: typed with the run failure codes.
import OpenAI from 'openai'

export interface CatalogModel {
  id: string
  providerSlug: string
  maxOutputTokens: number | null
  baseUrl: string | null
  apiKey: string | null
}

export interface ChatMessage {
  role: 'system' | 'user' | 'assistant' | 'tool'
  content: string
  /** A tool's answer names the call it answers. */
  toolCallId?: string
  /** An assistant turn that asked for tools. */
  toolCalls?: ToolCall[]
}

export interface ToolCall { id: string; name: string; arguments: string }

export interface ToolDefinition { name: string; description: string; parameters: Record<string, unknown> }

export interface ChatRequest {
  system?: string | undefined
  prompt: string
  /** Asks the provider for a JSON object (response_format json_object). */
  json?: boolean
}

export interface StreamRequest {
  messages: ChatMessage[]
  /** Output ceiling of this call; the model's own when absent. */
  maxTokens?: number | null
  json?: boolean
  tools?: ToolDefinition[]
  /** Stops the call (a stopped turn); the answer so far is kept. */
  signal?: AbortSignal
  /** How long the provider may stay silent, before its first part or between parts. */
  idleTimeoutMs?: number
  /**
   * Called with each piece of answer text as it arrives; with it the answer is
   * streamed, without it asked for whole (llm steps and agents read it whole).
   */
  onText?: (delta: string) => void | Promise<void>
}

export type ProviderFailure = 'model_not_found' | 'missing_api_key' | 'connector_error' | 'auth_error' | 'credit_exhausted'
  | 'timeout' | 'cancelled'

export type FinishReason = 'stop' | 'length' | 'tool_calls'

export type StreamAnswer =
  | { ok: true; text: string; finishReason: FinishReason; toolCalls: ToolCall[] }
  | { ok: false; failureCode: ProviderFailure; detail: string; text: string }

export type ChatAnswer = { ok: true; text: string } | { ok: false; failureCode: ProviderFailure; detail: string }

const DEFAULT_IDLE_TIMEOUT_MS = 60_000

/** A prompt and an optional system text, answered whole (llm steps). */
export async function completeChat(model: CatalogModel, request: ChatRequest): Promise<ChatAnswer> {
  const answer = await streamChat(model, {
    messages: [...(request.system ? [{ role: 'system' as const, content: request.system }] : []), { role: 'user', content: request.prompt }],
    json: request.json,
  })
  return answer.ok ? { ok: true, text: answer.text } : { ok: false, failureCode: answer.failureCode, detail: answer.detail }
}

/** One completion, streamed: text arrives through onText, the outcome is returned. */
export async function streamChat(model: CatalogModel, request: StreamRequest): Promise<StreamAnswer> {
  if (model.providerSlug === 'local') return localModel(model, request)
  if (!model.apiKey) return { ok: false, failureCode: 'missing_api_key', detail: `the provider "${model.providerSlug}" has no API key`, text: '' }
  return remoteModel(model, request)
}

// The built-in deterministic model: it answers with the last user message, word by
// word, cut at the output ceiling (a token counted as four characters, the estimate
// the service uses everywhere).
async function localModel(model: CatalogModel, request: StreamRequest): Promise<StreamAnswer> {
  const last = [...request.messages].reverse().find((m) => m.role === 'user')?.content ?? ''
  const ceiling = request.maxTokens ?? model.maxOutputTokens
  const limitChars = ceiling ? ceiling * 4 : Infinity
  const pieces = last.match(/\S+\s*|\s+/g) ?? []
  let text = ''
  for (const piece of pieces) {
    if (request.signal?.aborted) return { ok: false, failureCode: 'cancelled', detail: 'the turn was stopped', text }
    const room = limitChars - text.length
    const delta = piece.length > room ? piece.slice(0, room) : piece
    if (delta) {
      text += delta
      await request.onText?.(delta)
    }
    if (text.length >= limitChars) return { ok: true, text, finishReason: 'length', toolCalls: [] }
  }
  return { ok: true, text, finishReason: 'stop', toolCalls: [] }
}

async function remoteModel(model: CatalogModel, request: StreamRequest): Promise<StreamAnswer> {
  // An abort listener never fires for a signal aborted before it was added.
  if (request.signal?.aborted) return { ok: false, failureCode: 'cancelled', detail: 'the turn was stopped', text: '' }
  const idleMs = request.idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS
  // The client's own timeout bounds connecting and the first answer; the idle timer
  // below also bounds a stream that stops sending halfway.
  const client = new OpenAI({ apiKey: model.apiKey!, baseURL: String(model.baseUrl), maxRetries: 0, timeout: idleMs })
  const controller = new AbortController()
  let timedOut = false
  let idle: NodeJS.Timeout | undefined
  const arm = () => {
    clearTimeout(idle)
    idle = setTimeout(() => { timedOut = true; controller.abort() }, idleMs)
  }
  const onStop = () => controller.abort()
  request.signal?.addEventListener('abort', onStop)
  let text = ''
  const calls = new Map<number, ToolCall>()
  let finishReason: FinishReason = 'stop'
  const ceiling = request.maxTokens ?? model.maxOutputTokens
  const body = {
    model: model.id,
    messages: request.messages.map(toOpenAi),
    ...(ceiling ? { max_tokens: ceiling } : {}),
    ...(request.json ? { response_format: { type: 'json_object' as const } } : {}),
    ...(request.tools?.length ? { tools: request.tools.map((t) => ({ type: 'function' as const, function: t })) } : {}),
  }
  try {
    arm()
    if (!request.onText) {
      const whole = await client.chat.completions.create({ ...body, stream: false }, { signal: controller.signal })
      const choice = whole.choices?.[0]
      if (!choice) return { ok: false, failureCode: 'connector_error', detail: 'the model provider\'s answer has no message', text: '' }
      const toolCalls = (choice.message.tool_calls ?? []).flatMap((c) =>
        c.type === 'function' ? [{ id: c.id, name: c.function.name, arguments: c.function.arguments }] : [])
      return { ok: true, text: choice.message.content ?? '', toolCalls,
        finishReason: toolCalls.length > 0 ? 'tool_calls' : choice.finish_reason === 'length' ? 'length' : 'stop' }
    }
    const stream = await client.chat.completions.create({ ...body, stream: true }, { signal: controller.signal })
    for await (const chunk of stream) {
      arm()
      const choice = chunk.choices?.[0]
      if (!choice) continue
      const delta = choice.delta?.content
      if (delta) {
        text += delta
        await request.onText?.(delta)
      }
      for (const call of choice.delta?.tool_calls ?? []) {
        const known = calls.get(call.index) ?? { id: call.id ?? `call_${call.index}`, name: '', arguments: '' }
        if (call.function?.name) known.name += call.function.name
        if (call.function?.arguments) known.arguments += call.function.arguments
        calls.set(call.index, known)
      }
      if (choice.finish_reason === 'length') finishReason = 'length'
      else if (choice.finish_reason === 'tool_calls') finishReason = 'tool_calls'
    }
    // An aborted stream may end without throwing: how it ended decides.
    if (request.signal?.aborted) return { ok: false, failureCode: 'cancelled', detail: 'the turn was stopped', text }
    if (timedOut) return { ok: false, failureCode: 'timeout', detail: `the model provider was silent for ${idleMs} ms`, text }
    if (calls.size > 0) finishReason = 'tool_calls'
    return { ok: true, text, finishReason, toolCalls: [...calls.values()] }
  } catch (error) {
    if (request.signal?.aborted) return { ok: false, failureCode: 'cancelled', detail: 'the turn was stopped', text }
    if (timedOut) return { ok: false, failureCode: 'timeout', detail: `the model provider was silent for ${idleMs} ms`, text }
    return { ...typed(error, model), text }
  } finally {
    clearTimeout(idle)
    request.signal?.removeEventListener('abort', onStop)
  }
}

function toOpenAi(message: ChatMessage): OpenAI.Chat.ChatCompletionMessageParam {
  if (message.role === 'tool') return { role: 'tool', content: message.content, tool_call_id: message.toolCallId ?? '' }
  if (message.role === 'assistant' && message.toolCalls?.length) {
    return { role: 'assistant', content: message.content || null,
      tool_calls: message.toolCalls.map((c) => ({ id: c.id, type: 'function' as const, function: { name: c.name, arguments: c.arguments } })) }
  }
  return { role: message.role, content: message.content } as OpenAI.Chat.ChatCompletionMessageParam
}

/** A provider's refusal as the failure code runs, messages and agents carry. */
function typed(error: unknown, model: CatalogModel): { ok: false; failureCode: ProviderFailure; detail: string } {
  const fail = (failureCode: ProviderFailure, detail: string) => ({ ok: false as const, failureCode, detail })
  if (error instanceof OpenAI.APIConnectionTimeoutError) return fail('timeout', 'the model provider did not answer in time')
  if (error instanceof OpenAI.APIError && typeof error.status === 'number') {
    const status = error.status
    if (status === 401 || status === 403) return fail('auth_error', `the model provider refused the key (${status})`)
    if (status === 402 || (status === 429 && /quota|credit|billing/i.test(error.message))) {
      return fail('credit_exhausted', `the model provider reports no credit left (${status})`)
    }
    if (status === 404) return fail('model_not_found', `the provider does not know the model "${model.id}"`)
    return fail('connector_error', `the model provider answered ${status}`)
  }
  return fail('connector_error', `the model provider did not answer: ${(error as Error).message}`)
}
