import type { Task } from 'graphile-worker'
import { buffer } from 'node:stream/consumers'
import { streamChat, type CatalogModel, type ChatMessage, type ToolCall } from '../../server/core/models/provider.ts'
import { PROJECT_THREAD_TOOLS, toolId } from '../../server/core/agents/tools.ts'
import { ObjectChanged, type ObjectStore } from '../../server/core/storage/object-store.ts'
import { embeddingModel, queryEmbedding, type Query } from '../../server/core/indexing/pipeline.ts'

interface Turn {
  model: CatalogModel | null
  maxOutputTokens: number | null
  messages: ChatMessage[]
  projectId: string | null
}

/** How often the text so far is written while it streams: a poller sees it grow. */
export const PROGRESS_INTERVAL_MS = 150
/** Model calls of one answer at most: the last may not ask for tools again. */
export const MAX_TOOL_ROUNDS = 6

type ToolOutcome = { result: unknown } | { error: string } | { stopped: true }

// Streams the provider's answer to a chat message into its assistant message, then
// settles it complete or failed (SQL: db/functions/0101_generation.sql). The first
// text is written at once, the rest at most every PROGRESS_INTERVAL_MS; a write that
// finds the turn stopped stops the provider. In a project thread the model may call
// the project's file tools (db/functions/0132_thread_tools.sql) between its parts.
export function generateReply(idleTimeoutMs: number, store: ObjectStore | null = null): Task {
  return async (payload, helpers) => {
    const { organizationId, messageId } = payload as { organizationId: string; messageId: string }
    const { rows: [started] } = await helpers.query<{ turn: Turn | null }>('select app.worker_generation_start($1, $2) as turn',
      [organizationId, messageId])
    const turn = started?.turn
    if (!turn) return
    const settle = (outcome: Record<string, unknown>) =>
      helpers.query('select app.worker_generation_settle($1, $2, $3)', [organizationId, messageId, JSON.stringify(outcome)])
    if (!turn.model) {
      await settle({ errorCode: 'model_not_found', error: 'the model is no longer in the organization\'s catalog', text: '' })
      return
    }

    const stop = new AbortController()
    let text = ''
    let written = ''
    let lastWrite = 0
    let writing: Promise<void> | null = null
    const write = async () => {
      const snapshot = text
      const { rows: [row] } = await helpers.query<{ streaming: boolean }>('select app.worker_generation_progress($1, $2, $3) as streaming',
        [organizationId, messageId, snapshot])
      written = snapshot
      lastWrite = Date.now()
      if (!row?.streaming) stop.abort()
    }
    const query: Query = async (text, params) => (await helpers.query(text, params)).rows as never
    const tools = turn.projectId ? PROJECT_THREAD_TOOLS : []
    const callTool = async (call: ToolCall): Promise<ToolOutcome> => {
      const tool = tools.some((known) => known.name === call.name) ? toolId(call.name, ['files.read', 'files.search']) : null
      if (!tool) return { error: `there is no tool ${call.name}` }
      let args: unknown
      try {
        args = call.arguments.trim() === '' ? {} : JSON.parse(call.arguments)
      } catch {
        return { error: 'the arguments are not JSON' }
      }
      if (typeof args !== 'object' || args === null || Array.isArray(args)) return { error: 'the arguments must be an object' }
      if (tool === 'files.search') {
        // The query's vector is the worker's to compute; whatever the model sent under
        // that name is replaced.
        const text = (args as { query?: unknown }).query
        ;(args as Record<string, unknown>).queryEmbedding = typeof text === 'string' && text.trim() !== ''
          ? await queryEmbedding(await embeddingModel(query, organizationId), text.slice(0, 2000), stop.signal)
          : null
      }
      const { rows: [row] } = await helpers.query<{ answer: Record<string, any> }>(
        'select app.worker_thread_tool($1, $2, $3, $4) as answer', [organizationId, messageId, tool, JSON.stringify(args)])
      const answer = row!.answer
      if (answer.fetch) return readPlainText(store, answer.fetch)
      return answer as ToolOutcome
    }

    const messages = [...turn.messages]
    for (let round = 1; ; round++) {
      const offered = round < MAX_TOOL_ROUNDS ? tools : []
      const answer = await streamChat(turn.model, {
        messages, maxTokens: turn.maxOutputTokens, signal: stop.signal, idleTimeoutMs,
        tools: offered,
        onText: async (delta) => {
          text += delta
          // One write at a time; the text written is the newest at the time of writing.
          if (!writing && (written === '' || Date.now() - lastWrite >= PROGRESS_INTERVAL_MS)) {
            writing = write().finally(() => { writing = null })
            if (written === '') await writing
          }
        },
      })
      await writing
      if (!answer.ok) {
        if (answer.failureCode !== 'cancelled') await settle({ text, errorCode: answer.failureCode, error: answer.detail })
        return
      }
      // Calls when none were offered (a personal thread, the last round) end the answer
      // with its text: a model that keeps asking never loops.
      if (answer.toolCalls.length === 0 || offered.length === 0) {
        await settle({ text, finishReason: answer.finishReason === 'tool_calls' ? 'stop' : answer.finishReason })
        return
      }
      messages.push({ role: 'assistant', content: answer.text, toolCalls: answer.toolCalls })
      for (const call of answer.toolCalls) {
        const outcome = await callTool(call)
        if ('stopped' in outcome) return
        messages.push({ role: 'tool', toolCallId: call.id, content: JSON.stringify('error' in outcome ? { error: outcome.error } : outcome.result) })
      }
    }
  }
}

interface Fetch { fileId: string; name: string; mimeType: string; key: string; etag: string | null }

// A plain-text file that was never indexed, read from the object store as UTF-8.
async function readPlainText(store: ObjectStore | null, file: Fetch): Promise<ToolOutcome> {
  if (!store) return { error: 'file contents cannot be read: no object store is configured' }
  let stored
  try {
    stored = await store.get(file.key, { ifMatch: file.etag ?? undefined })
  } catch (error) {
    if (error instanceof ObjectChanged) return { error: 'the file\'s stored bytes changed after it was bound' }
    return { error: 'the object store cannot be reached; try again later' }
  }
  if (!stored) return { error: 'the file\'s bytes are missing' }
  const bytes = await buffer(stored.body)
  let decoded: string
  try {
    decoded = new TextDecoder('utf-8', { fatal: true }).decode(bytes)
  } catch {
    return { error: `the file ${file.name} is not UTF-8 text` }
  }
  return { result: { fileId: file.fileId, name: file.name, mimeType: file.mimeType, text: decoded.replaceAll('\u0000', '\uFFFD'), truncated: false } }
}
