import type { Task } from 'graphile-worker'
import { streamChat, type CatalogModel, type ChatMessage } from '../../server/core/models/provider.ts'

interface Turn {
  model: CatalogModel | null
  maxOutputTokens: number | null
  messages: ChatMessage[]
}

/** How often the text so far is written while it streams: a poller sees it grow. */
export const PROGRESS_INTERVAL_MS = 150

// Streams the provider's answer to a chat message into its assistant message, then
// settles it complete or failed (SQL: db/functions/0101_generation.sql). The first
// text is written at once, the rest at most every PROGRESS_INTERVAL_MS; a write that
// finds the turn stopped stops the provider.
export function generateReply(idleTimeoutMs: number): Task {
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
    const answer = await streamChat(turn.model, {
      messages: turn.messages, maxTokens: turn.maxOutputTokens, signal: stop.signal, idleTimeoutMs,
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
    if (answer.ok) {
      await settle({ text: answer.text, finishReason: answer.finishReason })
    } else if (answer.failureCode !== 'cancelled') {
      await settle({ text: answer.text, errorCode: answer.failureCode, error: answer.detail })
    }
  }
}
