import type { JobHelpers, Task } from 'graphile-worker'
import type { AutomationDocument } from '../../server/core/automations/document.ts'
import { inputProblem } from '../../server/core/automations/document.ts'
import { storable } from '../../server/core/storable.ts'
import { advance, type Effect, type EngineState, type RunContext, type StepCommit } from '../../server/core/engine/engine.ts'
import { liveConnectors, type AgentCheck, type CatalogModel, type PlatformAction } from '../../server/core/engine/connectors.ts'

interface Claim {
  run: {
    id: string; organization_id: string; automation_name: string; version: number; mode: 'live' | 'mock'
    project_id: string | null; document: AutomationDocument; input: unknown; state: EngineState & { validated?: boolean }; seq: number
  }
  secrets: Record<string, string>
  models: CatalogModel[]
}

/** How often a worker busy with one step shows it is alive. */
const HEARTBEAT_MS = 30_000

// Executes a run step by step, committing after each one: a worker that dies repeats
// at most the step in flight, and a cancel is honoured at the next step boundary.
export const runAutomation: Task = async (payload, helpers) => {
  const { organizationId, runId } = payload as { organizationId: string; runId: string }
  const { rows: [claimed] } = await helpers.query<{ claim: Claim | null }>('select app.worker_run_claim($1, $2) as claim',
    [organizationId, runId])
  if (!claimed?.claim) return
  const committer = new Committer(helpers, organizationId, runId, claimed.claim.run.seq)
  // A long step (a slow endpoint, retries with backoff) must not look like a dead
  // worker to recover_runs.
  const heartbeat = setInterval(() => committer.beat(), HEARTBEAT_MS)
  try {
    await execute(claimed.claim, committer, helpers)
  } finally {
    clearInterval(heartbeat)
  }
}

class Committer {
  constructor(private helpers: JobHelpers, private organizationId: string, private runId: string, private seq: number) {}

  /** Stores one step; the run's status afterwards ('lost' when another worker holds it). */
  async commit(step: StepCommit): Promise<string> {
    const { rows: [result] } = await this.helpers.query<{ status: string }>('select app.worker_run_commit($1, $2, $3, $4) as status',
      [this.organizationId, this.runId, this.seq, storable(step)])
    this.seq += 1
    return result!.status
  }

  beat(): void {
    this.helpers.query('select app.worker_run_heartbeat($1, $2, $3)', [this.organizationId, this.runId, this.seq])
      .catch((error: Error) => this.helpers.logger.warn(`heartbeat of run ${this.runId} failed: ${error.message}`))
  }
}

async function execute(claim: Claim, committer: Committer, helpers: JobHelpers): Promise<void> {
  const { run } = claim
  const document = run.document
  let state: EngineState & { validated?: boolean } = { ...run.state, steps: run.state.steps ?? {}, loops: run.state.loops ?? [] }

  if (!state.validated) {
    const invalid = inputProblem(document, run.input)
    if (invalid) {
      await committer.commit({ state, trace: [], effects: [], outcome: 'fail', failureCode: 'input_invalid',
        detail: `The input does not match the automation's inputs: ${invalid}` })
      return
    }
    state = { ...state, validated: true }
  }

  const context: RunContext = {
    run: { id: run.id, name: run.automation_name, version: run.version, mode: run.mode, projectId: run.project_id },
    input: run.input, secrets: claim.secrets, now: () => new Date(),
    mockFor: (step) => step.mock,
    sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
  }
  const connectors = liveConnectors(claim.models, platformActions(helpers, run.organization_id), agentCheck(helpers, run.organization_id))
  for (;;) {
    const step = await advance(document, state, context, connectors)
    let status: string
    try {
      status = await committer.commit({ ...step, state: { ...step.state, validated: true } as EngineState })
    } catch (error) {
      // A step whose result cannot be stored fails the run rather than repeating
      // its effects on every retry of the job.
      helpers.logger.error(`run ${run.id}: storing a step failed: ${(error as Error).message}`)
      await committer.commit({ state, trace: [], effects: [], outcome: 'fail', failureCode: 'internal_error',
        detail: 'The result of a step could not be stored.' })
      return
    }
    if (status !== 'running') return
    state = step.state
  }
}

// Action steps write through the same SQL rules as the REST operations, attributed to
// the run (app.worker_action); a refusal of those rules fails the step with its reason.
function platformActions(helpers: JobHelpers, organizationId: string): PlatformAction {
  return async (action, params, context) => {
    const { rows: [row] } = await helpers.query<{ result: { output?: unknown; effect?: Effect; error?: string; code?: string } }>(
      'select app.worker_action($1, $2, $3, $4) as result', [organizationId, context.run.id, action, storable(params)])
    const result = row!.result
    if (result.error !== undefined) {
      return { kind: 'fail', failureCode: 'node_error', detail: `${action}: ${result.error}${result.code ? ` (${result.code})` : ''}` }
    }
    return { kind: 'port', port: 'success', output: result.output, effects: result.effect ? [result.effect] : [] }
  }
}

// The agent an agent step names, resolved and checked in SQL before the run parks.
function agentCheck(helpers: JobHelpers, organizationId: string): AgentCheck {
  return async (agentRef, projectRef, context) => {
    const { rows: [row] } = await helpers.query<{ checked: Awaited<ReturnType<AgentCheck>> }>(
      'select app.worker_agent_check($1, $2, $3, $4) as checked', [organizationId, context.run.id, agentRef, projectRef])
    return row!.checked
  }
}
