// One agent turn: the agent's model, told its instructions, answers a prompt, calling
// its granted tools as functions where the provider supports them, until it answers
// without asking for one. The caller (the run_agent job) supplies the tools and keeps
// the transcript; the outcome carries the run failure codes.
import { createHash } from 'node:crypto'
import type { FailureCode } from '../automations/document.ts'
import { readAnswer } from '../models/answer.ts'
import { streamChat, type CatalogModel, type ChatMessage, type ToolDefinition } from '../models/provider.ts'

export type ToolAnswer = { result: unknown; effect?: Record<string, unknown> } | { error: string } | { stopped: true }

export interface AgentTurn {
  model: CatalogModel
  instructions: string | null
  prompt: string
  tools: ToolDefinition[]
  answerFormat: { outputFormat?: string; outputSchema?: unknown }
  maxRounds: number
  idleTimeoutMs: number
  /** Ends the turn: the run's remaining time ran out, or the run stopped waiting. */
  signal: AbortSignal
  /** Calls one tool; `place` names the call, the same on a repeat of the turn that asks the same. */
  callTool: (name: string, args: unknown, place: string) => Promise<ToolAnswer>
  /** Keeps the conversation so far; false when the turn is no longer wanted. */
  onProgress: (transcript: ChatMessage[]) => Promise<boolean>
}

export type AgentOutcome =
  | { kind: 'answered'; output: unknown; transcript: ChatMessage[]; effects: Record<string, unknown>[] }
  | { kind: 'failed'; failureCode: FailureCode; detail: string; transcript: ChatMessage[]; effects: Record<string, unknown>[] }
  | { kind: 'stopped' }

export async function runAgentTurn(turn: AgentTurn): Promise<AgentOutcome> {
  const json = turn.answerFormat.outputFormat === 'json'
  const messages: ChatMessage[] = [
    ...(turn.instructions ? [{ role: 'system' as const, content: turn.instructions }] : []),
    { role: 'user', content: turn.prompt },
  ]
  const effects: Record<string, unknown>[] = []
  const failed = (failureCode: FailureCode, detail: string): AgentOutcome =>
    ({ kind: 'failed', failureCode, detail, transcript: messages, effects })

  const outOfTime = () => failed('timeout', 'the run\'s time ran out while its agent was working')
  for (let round = 1; round <= turn.maxRounds; round++) {
    if (turn.signal.aborted) return outOfTime()
    if (!(await turn.onProgress(messages))) return { kind: 'stopped' }
    const answer = await streamChat(turn.model, {
      messages, json: json && turn.tools.length === 0, tools: turn.tools, signal: turn.signal, idleTimeoutMs: turn.idleTimeoutMs,
    })
    if (!answer.ok) {
      if (answer.failureCode === 'cancelled') return outOfTime()
      return failed(answer.failureCode, answer.detail)
    }
    if (answer.toolCalls.length === 0) {
      messages.push({ role: 'assistant', content: answer.text })
      return finish(answer.text, json, turn.answerFormat.outputSchema, messages, effects)
    }
    messages.push({ role: 'assistant', content: answer.text, toolCalls: answer.toolCalls })
    for (const [index, call] of answer.toolCalls.entries()) {
      let args: unknown
      try {
        args = call.arguments.trim() === '' ? {} : JSON.parse(call.arguments)
      } catch {
        messages.push({ role: 'tool', toolCallId: call.id, content: JSON.stringify({ error: 'the arguments are not JSON' }) })
        continue
      }
      if (turn.signal.aborted) return outOfTime()
      // The call's place names its round, position and what it asks: a repeated turn
      // that asks the same writes once, and one that asks otherwise writes anew.
      const asked = createHash('sha256').update(`${call.name}\n${call.arguments}`).digest('hex').slice(0, 16)
      const result = await turn.callTool(call.name, args, `${round}.${index}.${asked}`)
      if ('stopped' in result) return { kind: 'stopped' }
      if ('effect' in result && result.effect) effects.push(result.effect)
      messages.push({ role: 'tool', toolCallId: call.id,
        content: JSON.stringify('error' in result ? { error: result.error } : result.result) })
    }
  }
  return failed('llm_output_invalid', `the agent still asked for tools after ${turn.maxRounds} model calls`)
}

function finish(text: string, json: boolean, schema: unknown, transcript: ChatMessage[],
  effects: Record<string, unknown>[]): AgentOutcome {
  const read = readAnswer(text, json, schema, 'agent')
  return read.ok ? { kind: 'answered', output: read.output, transcript, effects }
    : { kind: 'failed', failureCode: 'llm_output_invalid', detail: read.detail, transcript, effects }
}
