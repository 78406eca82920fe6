// The automation document format of DESIGN.md "Automation documents": its shape,
// and the validation that reports every problem with a JSON path.
import * as v from 'valibot'
import { Ajv2020 } from 'ajv/dist/2020.js'
import { ExpressionError, NAMESPACES, rootNames, templateExpressions } from './expressions.ts'

export const STEP_TYPES = ['set', 'condition', 'llm', 'http', 'action', 'approval', 'ask', 'agent', 'repeat', 'output'] as const
export type StepType = typeof STEP_TYPES[number]

/** The ports each step type emits. */
export const PORTS: Record<StepType, readonly string[]> = {
  set: ['success'], condition: ['true', 'false'], llm: ['success'], http: ['success'], action: ['success'],
  approval: ['approved', 'rejected'], ask: ['success'], agent: ['success'], repeat: ['loop', 'done'], output: ['success'],
}

/** Steps that reach outside the run; in mock mode they answer with their mock. */
export const SIDE_EFFECTING: ReadonlySet<StepType> = new Set(['llm', 'http', 'action', 'agent'])

/** Platform writes an action step may name. */
export const ACTIONS = ['task.create', 'task.comment', 'contact.upsert'] as const

export const FAILURE_CODES = [
  'node_error', 'connector_error', 'llm_output_invalid', 'auth_error', 'missing_api_key', 'credit_exhausted',
  'model_not_found', 'timeout', 'input_invalid', 'cancelled_by_parent', 'internal_error',
] as const
export type FailureCode = typeof FAILURE_CODES[number]

const name = v.pipe(v.string(), v.maxLength(200),
  v.regex(/^[A-Za-z0-9][A-Za-z0-9._-]*(\/[A-Za-z0-9][A-Za-z0-9._-]*)*$/, 'must be a path of letters, digits, ".", "_" and "-" separated by "/"'),
  v.check((s) => !s.includes('__') && !s.includes('_/'), 'must not contain "__" or "_/" (URLs write "/" as "__")'))
const slug = v.pipe(v.string(), v.regex(/^[A-Za-z][A-Za-z0-9_-]{0,63}$/, 'must start with a letter and hold letters, digits, "_" or "-" (at most 64)'))
const record = v.record(v.string(), v.unknown())

const step = v.strictObject({
  slug,
  type: v.picklist(STEP_TYPES, `must be one of ${STEP_TYPES.join(', ')}`),
  name: v.optional(v.string()),
  config: v.optional(record, {}),
  mock: v.optional(v.unknown()),
  next: v.optional(v.record(v.string(), v.string()), {}),
})

const test = v.strictObject({
  name: v.pipe(v.string(), v.minLength(1)),
  input: v.optional(v.unknown(), {}),
  mocks: v.optional(record, {}),
  answers: v.optional(record, {}),
  expect: v.optional(v.strictObject({
    status: v.optional(v.picklist(['completed', 'failed', 'waiting', 'cancelled'])),
    output: v.optional(v.unknown()),
    failureCode: v.optional(v.string()),
  }), {}),
})

export const documentSchema = v.strictObject({
  name,
  description: v.optional(v.pipe(v.string(), v.maxLength(2000)), ''),
  inputs: v.optional(record),
  config: v.optional(v.strictObject({
    timeoutMs: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1000), v.maxValue(7 * 24 * 3_600_000))),
    retry: v.optional(v.strictObject({
      maxRetries: v.optional(v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(10)), 0),
      backoffMs: v.optional(v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(600_000)), 1000),
    })),
    variables: v.optional(record),
  }), {}),
  steps: v.pipe(v.array(step), v.minLength(1, 'a document has at least one step'), v.maxLength(200)),
  tests: v.optional(v.array(test), []),
})

export type AutomationDocument = v.InferOutput<typeof documentSchema>
export type Step = AutomationDocument['steps'][number]
export type DocumentTest = NonNullable<AutomationDocument['tests']>[number]

export interface Problem {
  path: string
  message: string
}

// One validator per distinct schema text; documents are few and reused by every run.
const compiledSchemas = new Map<string, ReturnType<Ajv2020['compile']>>()
function compileSchema(schema: unknown): ReturnType<Ajv2020['compile']> {
  const key = JSON.stringify(schema)
  let validate = compiledSchemas.get(key)
  if (!validate) {
    // A validator of its own per schema: an $id in one document cannot clash with another's.
    validate = new Ajv2020({ strict: false, allErrors: true }).compile(schema as object)
    if (compiledSchemas.size > 1000) compiledSchemas.clear()
    compiledSchemas.set(key, validate)
  }
  return validate
}

/** Whether a value is a usable JSON Schema; the problem otherwise. */
export function schemaProblem(schema: unknown): string | null {
  if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) return 'a schema is a JSON object'
  try {
    compileSchema(schema)
    return null
  } catch (error) {
    return (error as Error).message
  }
}

// What each step type's config must hold (beyond templates, checked separately).
const configRules: Partial<Record<StepType, (config: Record<string, unknown>) => Problem[]>> = {
  set: (c) => isRecord(c.values) ? [] : [{ path: 'values', message: 'must be an object of names to values' }],
  condition: (c) => typeof c.expression === 'string' && c.expression.trim() ? [] : [{ path: 'expression', message: 'is required' }],
  llm: (c) => [
    ...(typeof c.model === 'string' && c.model ? [] : [{ path: 'model', message: 'is required' }]),
    ...(typeof c.prompt === 'string' ? [] : [{ path: 'prompt', message: 'is required' }]),
    ...(c.outputFormat === undefined || c.outputFormat === 'text' || c.outputFormat === 'json' ? [] : [{ path: 'outputFormat', message: 'must be text or json' }]),
    ...(c.outputSchema === undefined ? [] : schemaIssue('outputSchema', c.outputSchema)),
  ],
  http: (c) => [
    ...(typeof c.url === 'string' && c.url ? [] : [{ path: 'url', message: 'is required' }]),
    ...(c.method === undefined || (typeof c.method === 'string' && /^(GET|POST|PUT|PATCH|DELETE|HEAD)$/.test(c.method)) ? []
      : [{ path: 'method', message: 'must be GET, POST, PUT, PATCH, DELETE or HEAD' }]),
    ...(c.headers === undefined || isRecord(c.headers) ? [] : [{ path: 'headers', message: 'must be an object' }]),
    ...(c.timeoutMs === undefined || (Number.isInteger(c.timeoutMs) && (c.timeoutMs as number) >= 100 && (c.timeoutMs as number) <= 120_000) ? []
      : [{ path: 'timeoutMs', message: 'must be 100 to 120000' }]),
  ],
  action: (c) => [
    ...((ACTIONS as readonly unknown[]).includes(c.action) ? [] : [{ path: 'action', message: `must be one of ${ACTIONS.join(', ')}` }]),
    ...(c.params === undefined || isRecord(c.params) ? [] : [{ path: 'params', message: 'must be an object' }]),
  ],
  approval: (c) => typeof c.title === 'string' && c.title ? [] : [{ path: 'title', message: 'is required' }],
  ask: (c) => [
    ...(typeof c.question === 'string' && c.question ? [] : [{ path: 'question', message: 'is required' }]),
    ...(Array.isArray(c.fields) && c.fields.length > 0 ? c.fields.flatMap((f, i) =>
      isRecord(f) && typeof f.name === 'string' && /^[A-Za-z_][A-Za-z0-9_]*$/.test(f.name)
        && (f.type === undefined || ['string', 'number', 'boolean'].includes(f.type as string))
        ? [] : [{ path: `fields.${i}`, message: 'must be {name, type: string|number|boolean, required?}' }])
      : [{ path: 'fields', message: 'must list at least one field' }]),
  ],
  agent: (c) => [
    ...(typeof c.agent === 'string' && c.agent ? [] : [{ path: 'agent', message: 'is required' }]),
    ...(typeof c.prompt === 'string' ? [] : [{ path: 'prompt', message: 'is required' }]),
  ],
  repeat: (c) => {
    const items = typeof c.items === 'string'
    const poll = typeof c.until === 'string'
    const problems: Problem[] = []
    if (items === poll) problems.push({ path: 'items', message: 'give either items (an expression) or until (an expression)' })
    if (c.delayMs !== undefined && !(Number.isInteger(c.delayMs) && (c.delayMs as number) >= 0 && (c.delayMs as number) <= 86_400_000)) {
      problems.push({ path: 'delayMs', message: 'must be 0 to 86400000' })
    }
    if (c.maxIterations !== undefined && !(Number.isInteger(c.maxIterations) && (c.maxIterations as number) >= 1 && (c.maxIterations as number) <= 10_000)) {
      problems.push({ path: 'maxIterations', message: 'must be 1 to 10000' })
    }
    return problems
  },
  output: (c) => isRecord(c.mapping) ? [] : [{ path: 'mapping', message: 'must be an object' }],
}

// Config keys holding bare expressions rather than templates.
const EXPRESSION_KEYS: Partial<Record<StepType, string[]>> = { condition: ['expression'], repeat: ['items', 'until'] }

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

function schemaIssue(path: string, schema: unknown): Problem[] {
  const problem = schemaProblem(schema)
  return problem ? [{ path, message: `is not a valid JSON Schema: ${problem}` }] : []
}

function expressionProblems(expression: string, path: string): Problem[] {
  try {
    return rootNames(expression).filter((root) => !(NAMESPACES as readonly string[]).includes(root))
      .map((root) => ({ path, message: `unknown template namespace "${root}" (use ${NAMESPACES.join(', ')})` }))
  } catch (error) {
    return [{ path, message: error instanceof ExpressionError ? error.message : String(error) }]
  }
}

export type Validated = { ok: true; document: AutomationDocument } | { ok: false; problems: Problem[] }

/** Every problem of a document, each with its JSON path. */
export function validateDocument(input: unknown): Validated {
  const parsed = v.safeParse(documentSchema, input)
  if (!parsed.success) {
    return { ok: false, problems: parsed.issues.map((issue) => ({ path: v.getDotPath(issue) ?? '', message: issue.message })) }
  }
  const document = parsed.output
  const problems: Problem[] = []
  const slugs = new Map<string, number>()
  document.steps.forEach((s, i) => {
    if (slugs.has(s.slug)) problems.push({ path: `steps.${i}.slug`, message: `"${s.slug}" is already the slug of steps.${slugs.get(s.slug)}` })
    else slugs.set(s.slug, i)
  })
  if (document.inputs !== undefined) problems.push(...schemaIssue('inputs', document.inputs))

  document.steps.forEach((s, i) => {
    const at = `steps.${i}`
    for (const problem of configRules[s.type]?.(s.config ?? {}) ?? []) problems.push({ path: `${at}.config.${problem.path}`, message: problem.message })
    for (const [port, target] of Object.entries(s.next ?? {})) {
      if (!PORTS[s.type].includes(port)) {
        problems.push({ path: `${at}.next.${port}`, message: `unknown port "${port}" for a ${s.type} step (ports: ${PORTS[s.type].join(', ')})` })
      }
      if (!slugs.has(target)) problems.push({ path: `${at}.next.${port}`, message: `links to "${target}", which is no step's slug` })
    }
    const expressionKeys = EXPRESSION_KEYS[s.type] ?? []
    for (const [key, value] of Object.entries(s.config ?? {})) {
      if (expressionKeys.includes(key) && typeof value === 'string') problems.push(...expressionProblems(value, `${at}.config.${key}`))
      else for (const expression of templateExpressions(value)) problems.push(...expressionProblems(expression, `${at}.config.${key}`))
    }
  })

  // Reachability from the first step along every port.
  const reached = new Set<string>()
  const queue = [document.steps[0]!.slug]
  while (queue.length > 0) {
    const current = queue.shift()!
    if (reached.has(current) || !slugs.has(current)) continue
    reached.add(current)
    queue.push(...Object.values(document.steps[slugs.get(current)!]!.next ?? {}))
  }
  document.steps.forEach((s, i) => {
    if (!reached.has(s.slug)) problems.push({ path: `steps.${i}`, message: `step "${s.slug}" is unreachable from the first step` })
  })

  document.tests?.forEach((t, i) => {
    for (const [key, kind] of [['mocks', 'mock'], ['answers', 'answer']] as const) {
      for (const named of Object.keys(t[key] ?? {})) {
        if (!slugs.has(named)) problems.push({ path: `tests.${i}.${key}.${named}`, message: `names "${named}", which is no step's slug (a ${kind} for a missing step)` })
      }
    }
  })
  return problems.length > 0 ? { ok: false, problems } : { ok: true, document }
}

/** Problems of a value against a JSON Schema, with paths relative to prefix. */
export function schemaViolations(schema: unknown, value: unknown, prefix: string): Problem[] {
  const validate = compileSchema(schema)
  if (validate(value)) return []
  return (validate.errors ?? []).map((error) => ({
    path: [prefix, ...error.instancePath.split('/').filter(Boolean)].join('.'),
    message: error.message ?? 'is invalid',
  }))
}

/** Why a run's input does not match the document's inputs schema; null when it does. */
export function inputProblem(document: AutomationDocument, input: unknown): string | null {
  if (!document.inputs) return null
  const problems = schemaViolations(document.inputs, input, 'input')
  return problems.length === 0 ? null : problems.map((p) => `${p.path} ${p.message}`).join('; ')
}
