import type { JobHelpers, Task } from 'graphile-worker'
import type { CatalogModel, ChatMessage } from '../../server/core/models/provider.ts'
import { runAgentTurn, type AgentOutcome, type ToolAnswer } from '../../server/core/agents/runner.ts'
import { functionName, toolDefinitions } from '../../server/core/agents/tools.ts'
import { fetchPublicPage } from '../../server/core/agents/web-fetch.ts'
import { limit } from '../../server/core/limits.ts'
import { storable } from '../../server/core/storable.ts'

interface Started {
  turn: { id: string; runId: string; prompt: string; agentName: string; answerFormat: { outputFormat?: string; outputSchema?: unknown } }
  agent: { id: string; name: string; instructions: string | null; tools: string[]; harnessRunnable: boolean; harness: string } | null
  model: CatalogModel | null
  secrets: Record<string, string>
  tools: { id: string; description: string }[]
  remainingMs: number
}

// Runs the turn an agent step handed over (db/functions/0097_agent_turns.sql): the
// agent's model with its instructions and granted tools, bounded by the time the run
// has left; then the run resumes with the answer, or fails with the turn's code.
export function runAgent(idleTimeoutMs: number): Task {
  return async (payload, helpers) => {
    const { organizationId, turnId } = payload as { organizationId: string; turnId: string }
    const { rows: [row] } = await helpers.query<{ started: Started | null }>('select app.worker_agent_start($1, $2) as started',
      [organizationId, turnId])
    const started = row?.started
    if (!started) return
    const settle = (outcome: Record<string, unknown>) => helpers.query('select app.worker_agent_finish($1, $2, $3)',
      [organizationId, turnId, storable(outcome)])

    const { agent, model } = started
    if (!agent) {
      await settle({ failureCode: 'node_error', detail: `the agent "${started.turn.agentName}" was deleted` })
      return
    }
    if (!agent.harnessRunnable) {
      await settle({ failureCode: 'node_error', detail: `the agent "${agent.name}" runs on the harness "${agent.harness}", which this deployment does not run` })
      return
    }
    if (!model) {
      await settle({ failureCode: 'model_not_found', detail: `the agent "${agent.name}"'s model is no longer in the organization's catalog` })
      return
    }
    const offered = new Map(started.tools.map((tool) => [functionName(tool.id), tool.id]))
    const deadline = AbortSignal.timeout(Math.max(1, started.remainingMs))
    let outcome: AgentOutcome
    try {
      outcome = await runAgentTurn({
        model, instructions: agent.instructions, prompt: started.turn.prompt, tools: toolDefinitions(started.tools),
        answerFormat: started.turn.answerFormat, maxRounds: limit('agent.maxToolRounds'), idleTimeoutMs, signal: deadline,
        callTool: (name, args, place) => callTool(helpers, organizationId, turnId, offered.get(name), name, args, place, started.secrets),
        onProgress: async (transcript: ChatMessage[]) => {
          const { rows: [live] } = await helpers.query<{ live: boolean }>('select app.worker_agent_progress($1, $2, $3) as live',
            [organizationId, turnId, storable(transcript)])
          return live?.live === true
        },
      })
    } catch (error) {
      // A fault of the turn itself fails the step rather than parking the run through
      // every retry of the job; a settle that cannot be stored is retried by the job.
      helpers.logger.error(`agent turn ${turnId} failed: ${(error as Error).message}`)
      outcome = { kind: 'failed', failureCode: 'internal_error', detail: 'the agent turn failed inside the service', transcript: [], effects: [] }
    }
    await settle(settlement(outcome))
  }
}

function settlement(outcome: AgentOutcome): Record<string, unknown> {
  if (outcome.kind === 'stopped') return { failureCode: 'cancelled_by_parent', detail: 'the run stopped waiting for its agent' }
  if (outcome.kind === 'answered') return { output: outcome.output, transcript: outcome.transcript, effects: outcome.effects }
  return { failureCode: outcome.failureCode, detail: outcome.detail, transcript: outcome.transcript, effects: outcome.effects }
}

async function callTool(helpers: JobHelpers, organizationId: string, turnId: string, tool: string | undefined, name: string,
  args: unknown, place: string, secrets: Record<string, string>): Promise<ToolAnswer> {
  if (!tool) return { error: `no tool ${name} is granted to this agent` }
  if (typeof args !== 'object' || args === null || Array.isArray(args)) return { error: 'the arguments must be an object' }
  const given = args as Record<string, unknown>
  if (tool === 'web.fetch') {
    if (typeof given.url !== 'string') return { error: 'url is required' }
    const secretName = given.bearerSecret
    if (secretName !== undefined && (typeof secretName !== 'string' || !(secretName in secrets))) {
      return { error: 'bearerSecret must name a secret granted to this agent' }
    }
    // The database still has to grant the tool at the moment of the call.
    const { rows: [row] } = await helpers.query<{ answer: ToolAnswer | { allowed: true } }>(
      'select app.worker_agent_tool($1, $2, $3, $4, $5) as answer', [organizationId, turnId, `${turnId}:${place}`, tool, '{}'])
    const answer = row!.answer
    if (!('allowed' in answer)) return answer
    return fetchPublicPage(given.url, limit('agent.webFetchMaxBytes'), secretName ? secrets[secretName as string] : undefined)
  }
  const { rows: [row] } = await helpers.query<{ answer: ToolAnswer }>('select app.worker_agent_tool($1, $2, $3, $4, $5) as answer',
    [organizationId, turnId, `${turnId}:${place}`, tool, storable(given)])
  return row!.answer
}
