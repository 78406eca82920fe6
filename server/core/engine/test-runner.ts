// automation_test: a document's own tests, run in mock mode in memory. Side-effecting
// steps answer with the test's mocks (else their own mock); approvals and asks take
// the test's answers; nothing outside the run is touched.
import { isDeepStrictEqual } from 'node:util'
import type { AutomationDocument, DocumentTest, FailureCode } from '../automations/document.ts'
import { inputProblem } from '../automations/document.ts'
import { advance, type Connectors, type EngineState, type RunContext } from './engine.ts'

/** Steps one test may take before it counts as endless. */
const MAX_STEPS = 10_000

export interface TestResult {
  name: string
  passed: boolean
  status: 'completed' | 'failed' | 'waiting'
  output?: unknown
  failureCode?: FailureCode
  detail?: string
  problems: string[]
}

const noConnectors: Connectors = {
  llm: () => Promise.reject(new Error('mock runs call no model')),
  http: () => Promise.reject(new Error('mock runs call no endpoint')),
  action: () => Promise.reject(new Error('mock runs write nothing')),
  agent: () => Promise.reject(new Error('mock runs hand nothing to agents')),
}

// Tests never see secret values: each secret the document names reads as a
// placeholder, so templates that use one still resolve.
function placeholderSecrets(document: AutomationDocument): Record<string, string> {
  const names = new Set([...JSON.stringify(document.steps).matchAll(/secrets\.([A-Za-z_][A-Za-z0-9_]*)/g)].map((m) => m[1]!))
  return Object.fromEntries([...names].map((name) => [name, `<secret ${name}>`]))
}

export async function runTest(document: AutomationDocument, test: DocumentTest, name: string): Promise<TestResult> {
  const outcome = await execute(document, test, name)
  const expect = test.expect ?? {}
  const problems: string[] = []
  const wantedStatus = expect.status ?? 'completed'
  if (outcome.status !== wantedStatus) {
    problems.push(`status is ${outcome.status}${outcome.detail ? ` (${outcome.detail})` : ''}, expected ${wantedStatus}`)
  }
  if ('output' in expect && !isDeepStrictEqual(outcome.output, expect.output)) {
    problems.push(`output is ${JSON.stringify(outcome.output)}, expected ${JSON.stringify(expect.output)}`)
  }
  if (expect.failureCode !== undefined && outcome.failureCode !== expect.failureCode) {
    problems.push(`failureCode is ${outcome.failureCode ?? 'none'}, expected ${expect.failureCode}`)
  }
  return { name: test.name, passed: problems.length === 0, ...outcome, problems }
}

async function execute(document: AutomationDocument, test: DocumentTest, name: string): Promise<Omit<TestResult, 'name' | 'passed' | 'problems'>> {
  const input = test.input ?? {}
  const invalid = inputProblem(document, input)
  if (invalid) return { status: 'failed', failureCode: 'input_invalid', detail: invalid }
  const mocks = test.mocks ?? {}
  const answers = test.answers ?? {}
  const context: RunContext = {
    run: { id: `test:${test.name}`, name, version: 0, mode: 'mock', projectId: null },
    input, secrets: placeholderSecrets(document), now: () => new Date(),
    mockFor: (step) => (step.slug in mocks ? mocks[step.slug] : step.mock),
    sleep: async () => {},
  }
  let state: EngineState = { steps: {}, loops: [] }
  for (let taken = 0; taken < MAX_STEPS; taken++) {
    const commit = await advance(document, state, context, noConnectors)
    state = commit.state
    if (commit.outcome === 'complete') return { status: 'completed', output: commit.output }
    if (commit.outcome === 'fail') return { status: 'failed', failureCode: commit.failureCode, detail: commit.detail }
    if (commit.outcome === 'park') {
      const slug = state.next!
      if (commit.waitingFor === 'repeat') continue
      if (!(slug in answers)) return { status: 'waiting', detail: `${commit.waitingFor}:${slug} has no answer in the test` }
      const answer = answers[slug]
      if (commit.waitingFor === 'approval') {
        const decision = typeof answer === 'string' ? answer : (answer as { decision?: string } | null)?.decision
        const port = decision === 'approved' || decision === 'approve' || answer === true ? 'approved' : 'rejected'
        state.resume = { slug, port, output: { decision: port } }
      } else {
        state.resume = { slug, port: 'success', output: answer }
      }
    }
  }
  return { status: 'failed', failureCode: 'node_error', detail: `more than ${MAX_STEPS} steps` }
}
