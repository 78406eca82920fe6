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
  tools: { id: string; description: string }[]
  remainingMs: number
}

/** How often a turn busy in a long call asks whether its run still wants it. */
const LIVENESS_MS = 1_000

// Runs the turn an agent step handed over (db/functions/0097_agent_turns.sql): the
// agent's model with its instructions and granted tools, bounded by the time the run
// has left; then the run resumes with the answer, or fails with the turn's code. A
// cancel meanwhile stops the turn within a second, mid-call included.
export function runAgent(idleTimeoutMs: number): Task {
  return async (payload, helpers) => {
    const { organizationId, turnId } = payload as { organizationId: string; turnId: string }
    const { rows: [row] } = await helpers.query<{ started: Started | null }>('select app.worker_agent_start($1, $2) as started',
      [organizationId, turnId])
    const started = row?.started
    if (!started) return
    const outcome = await answer(helpers, organizationId, turnId, started, idleTimeoutMs)
    try {
      await settle(helpers, organizationId, turnId, settlement(outcome))
    } catch (error) {
      // An outcome that cannot be stored (a transcript the database refuses) still ends
      // the turn; a database that cannot be reached makes the job try again.
      helpers.logger.error(`agent turn ${turnId}: storing its outcome failed: ${(error as Error).message}`)
      await settle(helpers, organizationId, turnId, { failureCode: 'internal_error', detail: 'the agent\'s answer could not be stored' })
    }
  }
}

const settle = (helpers: JobHelpers, organizationId: string, turnId: string, outcome: Record<string, unknown>) =>
  helpers.query('select app.worker_agent_finish($1, $2, $3)', [organizationId, turnId, storable(outcome)])

async function answer(helpers: JobHelpers, organizationId: string, turnId: string, started: Started,
  idleTimeoutMs: number): Promise<AgentOutcome> {
  const { agent, model } = started
  const fail = (failureCode: 'node_error' | 'model_not_found', detail: string): AgentOutcome =>
    ({ kind: 'failed', failureCode, detail, transcript: [], effects: [] })
  if (!agent) return fail('node_error', `the agent "${started.turn.agentName}" was deleted`)
  if (!agent.harnessRunnable) {
    return fail('node_error', `the agent "${agent.name}" runs on the harness "${agent.harness}", which this deployment does not run`)
  }
  if (!model) return fail('model_not_found', `the agent "${agent.name}"'s model is no longer in the organization's catalog`)

  const stop = new AbortController()
  const signal = AbortSignal.any([AbortSignal.timeout(Math.max(1, started.remainingMs)), stop.signal])
  const watch = setInterval(() => {
    helpers.query<{ live: boolean }>('select app.worker_agent_live($1, $2) as live', [organizationId, turnId])
      .then(({ rows: [live] }) => { if (live?.live === false) stop.abort() },
        (error: Error) => helpers.logger.warn(`agent turn ${turnId}: liveness check failed: ${error.message}`))
  }, LIVENESS_MS)
  const offered = new Map(started.tools.map((tool) => [functionName(tool.id), tool.id]))
  try {
    const outcome = await runAgentTurn({
      model, instructions: agent.instructions, prompt: started.turn.prompt, tools: toolDefinitions(started.tools),
      answerFormat: started.turn.answerFormat, maxRounds: limit('agent.maxToolRounds'), idleTimeoutMs, signal,
      callTool: (name, args, place) => callTool(helpers, organizationId, turnId, offered.get(name), name, args, place, signal),
      onProgress: async (transcript: ChatMessage[]) => {
        const { rows: [live] } = await helpers.query<{ live: boolean }>('select app.worker_agent_progress($1, $2, $3) as live',
          [organizationId, turnId, storable(transcript)])
        return live?.live === true
      },
    })
    return stop.signal.aborted ? { kind: 'stopped' } : outcome
  } catch (error) {
    // A fault of the turn itself fails the step rather than parking the run through
    // every attempt of the job.
    helpers.logger.error(`agent turn ${turnId} failed: ${(error as Error).message}`)
    return { kind: 'failed', failureCode: 'internal_error', detail: 'the agent turn failed inside the service', transcript: [], effects: [] }
  } finally {
    clearInterval(watch)
  }
}

function settlement(outcome: AgentOutcome): Record<string, unknown> {
  if (outcome.kind === 'stopped') return { failureCode: 'cancelled_by_parent', detail: 'the run stopped waiting for its agent' }
  if (outcome.kind === 'answered') return { output: outcome.output, transcript: outcome.transcript }
  return { failureCode: outcome.failureCode, detail: outcome.detail, transcript: outcome.transcript }
}

async function callTool(helpers: JobHelpers, organizationId: string, turnId: string, tool: string | undefined, name: string,
  args: unknown, place: string, signal: AbortSignal): Promise<ToolAnswer> {
  if (!tool) return { error: `no tool ${name} is granted to this agent` }
  if (typeof args !== 'object' || args === null || Array.isArray(args)) return { error: 'the arguments must be an object' }
  const given = args as Record<string, unknown>
  // The database decides every call: the grant as it is now, and the run still waiting.
  const { rows: [row] } = await helpers.query<{ answer: ToolAnswer | { allowed: true } }>(
    'select app.worker_agent_tool($1, $2, $3, $4, $5) as answer',
    [organizationId, turnId, `${turnId}:${place}`, tool, tool === 'web.fetch' ? '{}' : storable(given)])
  const answer = row!.answer
  if (!('allowed' in answer)) return answer
  if (typeof given.url !== 'string') return { error: 'url is required' }
  return fetchPublicPage(given.url, limit('agent.webFetchMaxBytes'), signal)
}
