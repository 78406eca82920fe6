// The run engine: one step at a time over the step graph of an automation document.
// It is pure over its state: the worker persists the state after every step (so a
// crash repeats at most the step in flight) and the test runner keeps it in memory.
import type { AutomationDocument, FailureCode, Step } from '../automations/document.ts'
import { SIDE_EFFECTING } from '../automations/document.ts'
import { ExpressionError, evaluate, render } from '../automations/expressions.ts'

export interface LoopFrame {
  slug: string
  /** Items mode: the list iterated; null when polling. */
  items: unknown[] | null
  /** Iterations started so far. */
  iteration: number
  /** Parked between iterations; the next visit starts the iteration. */
  delayed?: boolean
}

export interface EngineState {
  /** The step to run next; undefined before the first. */
  next?: string
  steps: Record<string, { output: unknown }>
  loops: LoopFrame[]
  output?: unknown
  /** An answer that resumes a parked step (set by the database on approval or ask). */
  resume?: { slug: string; port: string; output: unknown }
}

export interface TraceEntry {
  slug: string
  type: string
  port?: string
  startedAt: number
  finishedAt: number
  output?: unknown
  error?: string
}

export interface Effect {
  step: string
  type: string
  [key: string]: unknown
}

export type StepOutcome =
  | { kind: 'port'; port: string; output: unknown; effects?: Effect[] }
  | { kind: 'park'; waitingFor: 'approval' | 'ask' | 'agent' | 'repeat'; detail?: string; wait?: Record<string, unknown>; resumeAfterMs?: number }
  | { kind: 'fail'; failureCode: FailureCode; detail: string }

/** What a step reaches outside the run with; mock runs never call these. */
export interface Connectors {
  llm: (config: Record<string, unknown>, context: RunContext) => Promise<StepOutcome>
  http: (config: Record<string, unknown>, context: RunContext) => Promise<StepOutcome>
  action: (config: Record<string, unknown>, context: RunContext) => Promise<StepOutcome>
  /** Checks the agent a step names and hands it the work: a park, or a failure when it cannot run. */
  agent: (config: Record<string, unknown>, context: RunContext) => Promise<StepOutcome>
}

export interface RunContext {
  run: { id: string; name: string; version: number; mode: 'live' | 'mock'; projectId: string | null }
  input: unknown
  secrets: Record<string, string>
  now: () => Date
  /** Mock mode: the value a side-effecting step answers with (a test's mocks win). */
  mockFor: (step: Step) => unknown
  /** Waits between retries of a failed step. */
  sleep: (ms: number) => Promise<void>
}

/** Failures that another attempt may cure. */
const RETRYABLE: ReadonlySet<FailureCode> = new Set(['connector_error', 'llm_output_invalid'])

/** One committed step: what the worker persists. */
export interface StepCommit {
  state: EngineState
  trace: TraceEntry[]
  effects: Effect[]
  outcome: 'continue' | 'park' | 'complete' | 'fail'
  waitingFor?: string
  detail?: string
  wait?: Record<string, unknown>
  resumeAfterMs?: number
  output?: unknown
  failureCode?: FailureCode
}

export class StepFailure extends Error {
  constructor(readonly failureCode: FailureCode, message: string) {
    super(message)
  }
}

function bySlug(document: AutomationDocument, slug: string): Step {
  const step = document.steps.find((s) => s.slug === slug)
  if (!step) throw new StepFailure('node_error', `no step "${slug}"`)
  return step
}

function templateContext(document: AutomationDocument, state: EngineState, context: RunContext): Record<string, unknown> {
  const frame = state.loops.at(-1)
  return {
    input: context.input,
    config: document.config?.variables ?? {},
    steps: state.steps,
    loop: frame ? { index: frame.iteration - 1, iteration: frame.iteration, item: frame.items?.[frame.iteration - 1] } : {},
    secrets: context.secrets,
    run: context.run,
    now: context.now().toISOString(),
  }
}

/**
 * Runs the next step and says what to commit. Side-effecting steps call the
 * connectors in live mode and answer their mock in mock mode.
 */
export async function advance(document: AutomationDocument, state: EngineState, context: RunContext,
  connectors: Connectors): Promise<StepCommit> {
  const next: EngineState = structuredClone(state)
  next.loops ??= []
  next.steps ??= {}

  // A parked step resumed by an answer: take the chosen port, run nothing.
  if (next.resume) {
    const { slug, port, output } = next.resume
    delete next.resume
    const step = bySlug(document, slug)
    const at = context.now().getTime()
    const entry: TraceEntry = { slug, type: step.type, port, startedAt: at, finishedAt: at, output }
    return follow(document, next, step, port, output, [entry], [])
  }

  const slug = next.next ?? document.steps[0]!.slug
  const step = bySlug(document, slug)
  const startedAt = context.now().getTime()
  const retry = document.config?.retry
  let outcome: StepOutcome
  // Only a repeat step changes the state it runs with, and its failures are never
  // retried, so every attempt can run with the one copy.
  for (let attempt = 0; ; attempt++) {
    try {
      outcome = await runStep(document, next, step, context, connectors)
    } catch (error) {
      const failure = error instanceof StepFailure ? error
        : error instanceof ExpressionError ? new StepFailure('node_error', error.message)
          : new StepFailure('internal_error', (error as Error).message)
      outcome = { kind: 'fail', failureCode: failure.failureCode, detail: `${slug}: ${failure.message}` }
    }
    if (outcome.kind !== 'fail' || !RETRYABLE.has(outcome.failureCode) || attempt >= (retry?.maxRetries ?? 0)) break
    // Exponential backoff from the document's backoffMs.
    await context.sleep((retry?.backoffMs ?? 1000) * 2 ** attempt)
  }
  const finishedAt = context.now().getTime()

  if (outcome.kind === 'fail') {
    const entry: TraceEntry = { slug, type: step.type, startedAt, finishedAt, error: outcome.detail }
    return { state: next, trace: [entry], effects: [], outcome: 'fail', failureCode: outcome.failureCode, detail: outcome.detail }
  }
  if (outcome.kind === 'park') {
    next.next = slug
    const entry: TraceEntry = { slug, type: step.type, startedAt, finishedAt, output: { waitingFor: outcome.waitingFor } }
    return {
      state: next, trace: [entry], effects: [], outcome: 'park', waitingFor: outcome.waitingFor,
      detail: outcome.detail, wait: outcome.wait ? { slug, ...outcome.wait } : undefined, resumeAfterMs: outcome.resumeAfterMs,
    }
  }
  const entry: TraceEntry = { slug, type: step.type, port: outcome.port, startedAt, finishedAt, output: outcome.output }
  const effects = (outcome.effects ?? []).map((effect) => ({ ...effect, step: slug }))
  return follow(document, next, step, outcome.port, outcome.output, [entry], effects)
}

// Records a step's output and moves along its port: to the linked step; back to the
// enclosing repeat when a loop body ends; otherwise the run is complete.
function follow(document: AutomationDocument, state: EngineState, step: Step, port: string, output: unknown,
  trace: TraceEntry[], effects: Effect[]): StepCommit {
  state.steps[step.slug] = { output }
  if (step.type === 'output') state.output = output
  const target = step.next?.[port]
  if (target) {
    state.next = target
    return { state, trace, effects, outcome: 'continue' }
  }
  // A finished repeat has left the stack already: its end returns to an outer one.
  const frame = state.loops.at(-1)
  if (frame) {
    state.next = frame.slug
    return { state, trace, effects, outcome: 'continue' }
  }
  delete state.next
  return { state, trace, effects, outcome: 'complete', output: state.output ?? null }
}

async function runStep(document: AutomationDocument, state: EngineState, step: Step, context: RunContext,
  connectors: Connectors): Promise<StepOutcome> {
  const scope = () => templateContext(document, state, context)
  const config = step.config ?? {}

  if (context.run.mode === 'mock' && SIDE_EFFECTING.has(step.type)) {
    return { kind: 'port', port: 'success', output: context.mockFor(step) ?? null }
  }
  switch (step.type) {
    case 'set':
      return { kind: 'port', port: 'success', output: await render(config.values, scope()) }
    case 'condition': {
      const result = await evaluate(String(config.expression), scope())
      if (typeof result !== 'boolean') throw new StepFailure('node_error', `the condition gave ${JSON.stringify(result)}, not true or false`)
      return { kind: 'port', port: String(result), output: result }
    }
    case 'output':
      return { kind: 'port', port: 'success', output: await render(config.mapping, scope()) }
    case 'approval': {
      const title = String(await render(config.title, scope()))
      return { kind: 'park', waitingFor: 'approval', wait: { title } }
    }
    case 'ask': {
      const question = String(await render(config.question, scope()))
      return { kind: 'park', waitingFor: 'ask', wait: { question, fields: config.fields } }
    }
    case 'agent': {
      // Handed to a project agent; the run resumes with its answer when it reports
      // back. An agent that cannot run fails the step here, never leaving it parked.
      const outcome = await connectors.agent(await render(config, scope()) as Record<string, unknown>, context)
      return outcome.kind === 'park' ? { ...outcome, detail: `agent:${step.slug}` } : outcome
    }
    case 'repeat':
      return repeat(state, step, scope)
    case 'llm':
      return connectors.llm(await render(config, scope()) as Record<string, unknown>, context)
    case 'http':
      return connectors.http(await render(config, scope()) as Record<string, unknown>, context)
    case 'action':
      return connectors.action(await render(config, scope()) as Record<string, unknown>, context)
  }
}

// A repeat step iterates over items, or polls until a condition holds, running the
// steps on its loop port each time; a delay between iterations parks the run.
async function repeat(state: EngineState, step: Step, scope: () => Record<string, unknown>): Promise<StepOutcome> {
  const config = step.config ?? {}
  const delayMs = Number(config.delayMs ?? 0)
  const maxIterations = Number(config.maxIterations ?? 1000)
  let frame = state.loops.at(-1)
  if (!frame || frame.slug !== step.slug) {
    let items: unknown[] | null = null
    if (typeof config.items === 'string') {
      const value = await evaluate(config.items, scope())
      if (!Array.isArray(value)) throw new StepFailure('node_error', `items gave ${JSON.stringify(value)}, not a list`)
      items = value
    }
    frame = { slug: step.slug, items, iteration: 0 }
    state.loops.push(frame)
  } else if (frame.delayed) {
    // The wait between iterations is over.
    delete frame.delayed
    frame.iteration += 1
    return { kind: 'port', port: 'loop', output: { iteration: frame.iteration } }
  }

  const finished = frame.items
    ? frame.iteration >= frame.items.length
    : frame.iteration > 0 && (await evaluate(String(config.until), scope())) === true
  if (finished) {
    state.loops.pop()
    return { kind: 'port', port: 'done', output: { iterations: frame.iteration } }
  }
  if (frame.iteration >= maxIterations) {
    throw new StepFailure('node_error', `repeat "${step.slug}" ran ${maxIterations} iterations without finishing`)
  }
  if (delayMs > 0 && frame.iteration > 0) {
    frame.delayed = true
    return { kind: 'park', waitingFor: 'repeat', detail: `repeat:${step.slug}`, resumeAfterMs: delayMs }
  }
  frame.iteration += 1
  return { kind: 'port', port: 'loop', output: { iteration: frame.iteration } }
}
