import type { Task } from 'graphile-worker'
import type { AutomationDocument } from '../../server/automations/document.ts'
import { schemaViolations } from '../../server/automations/document.ts'
import { advance, type EngineState, type RunContext, type StepCommit } from '../engine/engine.ts'
import { liveConnectors, type CatalogModel } from '../engine/connectors.ts'

interface Claim {
  run: {
    id: string; organization_id: string; automation_name: string; version: number; mode: 'live' | 'mock'
    project_id: string | null; document: AutomationDocument; input: unknown; state: EngineState & { validated?: boolean }; seq: number
  }
  secrets: Record<string, string>
  models: CatalogModel[]
}

// Executes a run step by step, committing after each one: a worker that dies repeats
// at most the step in flight, and a cancel is honoured at the next step boundary.
export const runAutomation: Task = async (payload, helpers) => {
  const { organizationId, runId } = payload as { organizationId: string; runId: string }
  const { rows: [claimed] } = await helpers.query<{ claim: Claim | null }>('select app.worker_run_claim($1, $2) as claim',
    [organizationId, runId])
  const claim = claimed?.claim
  if (!claim) return
  const { run } = claim
  const document = run.document
  let state: EngineState & { validated?: boolean } = { ...run.state, steps: run.state.steps ?? {}, loops: run.state.loops ?? [] }
  let seq = run.seq
  const commit = async (step: StepCommit & { state: EngineState }): Promise<string> => {
    const { rows: [result] } = await helpers.query<{ status: string }>(
      'select app.worker_run_commit($1, $2, $3, $4) as status', [organizationId, runId, seq, JSON.stringify(step)])
    seq += 1
    return result!.status
  }

  if (!state.validated) {
    const problems = document.inputs ? schemaViolations(document.inputs, run.input, 'input') : []
    if (problems.length > 0) {
      await commit({ state, trace: [], effects: [], outcome: 'fail', failureCode: 'input_invalid',
        detail: `The input does not match the automation's inputs: ${problems.map((p) => `${p.path} ${p.message}`).join('; ')}` })
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
  const connectors = liveConnectors(claim.models)
  for (;;) {
    const step = await advance(document, state, context, connectors)
    const status = await commit({ ...step, state: { ...step.state, validated: true } as EngineState })
    if (status !== 'running') return
    state = step.state
  }
}
