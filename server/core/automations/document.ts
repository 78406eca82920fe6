// The automation document format: its shape (as valibot and as JSON Schema, for
// agents that author documents), and the validation that reports every problem with
// a JSON path in one pass.
import * as v from 'valibot'
import { toJsonSchema, type JsonSchema } from '@valibot/to-json-schema'
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

/** What each step type's config holds: described in the JSON Schema, checked by configRules below. */
export const STEP_CONFIG: Record<StepType, string> = {
  set: '{values: {name: value or template}}; outputs the rendered values',
  condition: '{expression: a JSONata expression giving true or false}',
  llm: '{model: a model id of the organization\'s catalog, providerSlug?, system?: template, prompt: template, '
    + 'outputFormat?: "text" | "json", outputSchema?: a JSON Schema the JSON output must match}',
  http: '{url: template, method?: GET | POST | PUT | PATCH | DELETE | HEAD, headers?: {name: template}, body?, timeoutMs?: 100 to 120000}',
  action: `{action: ${ACTIONS.join(' | ')}, params?: {name: template}}`,
  approval: '{title: template}; parks the run until someone approves or rejects',
  ask: '{question: template, fields: [{name, type?: "string" | "number" | "boolean", required?: boolean}]}; parks the run until someone answers',
  agent: '{agent: a project agent of the run\'s project, by id or name, prompt: template, projectId?: the project an '
    + 'organization-wide run\'s agent belongs to, outputFormat?: "text" | "json", outputSchema?: a JSON Schema the JSON answer '
    + 'must match}; parks the run (waiting, agent) while the agent answers with its model and granted tools; the answer is the output',
  repeat: '{items: an expression giving a list, or until: an expression; delayMs?: 0 to 86400000 between iterations, '
    + 'maxIterations?: 1 to 10000}; the loop port runs once per iteration, done when finished',
  output: '{mapping: {name: value or template}}; becomes the run\'s output',
}

const nameRule = v.check((s: string) => !s.includes('__') && !s.includes('_/'), 'must not contain "__" or "_/" (URLs write "/" as "__")')
const name = v.pipe(v.string(), v.maxLength(200),
  v.regex(/^[A-Za-z0-9][A-Za-z0-9._-]*(\/[A-Za-z0-9][A-Za-z0-9._-]*)*$/, 'must be a path of letters, digits, ".", "_" and "-" separated by "/"'),
  nameRule,
  v.description('The automation\'s name: segments of letters, digits, ".", "_" and "-" separated by "/", without "__" or "_/"'))
const slug = v.pipe(v.string(), v.regex(/^[A-Za-z][A-Za-z0-9_-]{0,63}$/, 'must start with a letter and hold letters, digits, "_" or "-" (at most 64)'))
const record = v.record(v.string(), v.unknown())

const stepTypeHelp = STEP_TYPES.map((type) => `${type}: ports ${PORTS[type].join('/')}; config ${STEP_CONFIG[type]}`).join('\n')

const step = v.pipe(v.strictObject({
  slug: v.pipe(slug, v.description('Unique within the document; links and templates (steps.<slug>.output) name the step by it')),
  type: v.pipe(v.picklist(STEP_TYPES, `must be one of ${STEP_TYPES.join(', ')}`), v.description(`The step type:\n${stepTypeHelp}`)),
  name: v.optional(v.string()),
  config: v.optional(v.pipe(record, v.description('What the step does; its keys depend on the type (see type). '
    + 'Strings may hold {{ expr }} templates over input, config, steps.<slug>.output, loop, secrets, run and now')), {}),
  mock: v.optional(v.pipe(v.unknown(), v.description('The output of a side-effecting step (llm, http, action, agent) in mock runs'))),
  next: v.optional(v.pipe(v.record(v.string(), v.string()),
    v.description('Maps each port the step emits to the slug of the step that follows; a port without an entry ends the run')), {}),
}), v.description('A step; the first step runs first'))

const test = v.strictObject({
  name: v.pipe(v.string(), v.minLength(1)),
  input: v.optional(v.pipe(v.unknown(), v.description('The run\'s input')), {}),
  mocks: v.optional(v.pipe(record, v.description('Outputs by step slug, replacing those steps\' own mock')), {}),
  answers: v.optional(v.pipe(record, v.description('By slug of an approval step ("approved" or "rejected") or an ask step (the answer object)')), {}),
  expect: v.optional(v.strictObject({
    status: v.optional(v.picklist(['completed', 'failed', 'waiting', 'cancelled'])),
    output: v.optional(v.unknown()),
    failureCode: v.optional(v.pipe(v.string(), v.description(`One of ${FAILURE_CODES.join(', ')}`))),
  }), {}),
})

export const documentSchema = v.pipe(v.strictObject({
  name,
  description: v.optional(v.pipe(v.string(), v.maxLength(2000)), ''),
  inputs: v.optional(v.pipe(record, v.description('A JSON Schema every run\'s input must match'))),
  config: v.optional(v.strictObject({
    timeoutMs: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1000), v.maxValue(7 * 24 * 3_600_000))),
    retry: v.optional(v.strictObject({
      maxRetries: v.optional(v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(10)), 0),
      backoffMs: v.optional(v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(600_000)), 1000),
    })),
    variables: v.optional(v.pipe(record, v.description('Values templates read as config.<name>'))),
  }), {}),
  steps: v.pipe(v.array(step), v.minLength(1, 'a document has at least one step'), v.maxLength(200)),
  tests: v.optional(v.pipe(v.array(test), v.description('Run by automation_test in mock mode')), []),
}), v.title('Automation document'))

let jsonSchema: JsonSchema | undefined
/**
 * The document format as JSON Schema (2020-12), converted from documentSchema. What
 * it cannot say (a step config's keys by type, links, reachability, templates) is
 * described in it and checked by validateDocument.
 */
export function documentJsonSchema(): JsonSchema {
  jsonSchema ??= toJsonSchema(documentSchema, {
    target: 'draft-2020-12',
    overrideAction: ({ valibotAction, jsonSchema: converted }) =>
      valibotAction === nameRule ? { ...converted, not: { pattern: '__|_/' } } : undefined,
  })
  return jsonSchema
}

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
    ...(c.projectId === undefined || (typeof c.projectId === 'string' && c.projectId) ? [] : [{ path: 'projectId', message: 'must be a project id' }]),
    ...(c.outputFormat === undefined || c.outputFormat === 'text' || c.outputFormat === 'json' ? [] : [{ path: 'outputFormat', message: 'must be text or json' }]),
    ...(c.outputSchema === undefined ? [] : schemaIssue('outputSchema', c.outputSchema)),
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

/**
 * How deeply a document's arrays and objects may nest (the document itself is level
 * 1). Checked first and without recursion, since the checks after it recurse. Over
 * MCP a document sits three levels down a JSON-RPC message whose body may nest 64
 * levels (MAX_BODY_DEPTH of the HTTP transport), so this is the limit an author meets.
 */
export const MAX_DOCUMENT_DEPTH = 48

function nestingProblem(root: unknown): Problem | null {
  const pending: [unknown, string, number][] = [[root, '', 0]]
  while (pending.length > 0) {
    const [value, path, depth] = pending.pop()!
    if (value === null || typeof value !== 'object') continue
    if (depth === MAX_DOCUMENT_DEPTH) return { path, message: `nests arrays and objects deeper than ${MAX_DOCUMENT_DEPTH} levels` }
    for (const [key, item] of Object.entries(value)) pending.push([item, path === '' ? key : `${path}.${key}`, depth + 1])
  }
  return null
}

const recordOf = (value: unknown): Record<string, unknown> => (isRecord(value) ? value : {})

/**
 * Every problem of a document, each with its JSON path, in one pass: the shape's
 * problems, and beside them whatever the rest of the document still lets the graph
 * checks find (links, ports, reachability, configs, templates, tests), so an
 * unknown step type does not hide a broken link.
 */
export function validateDocument(input: unknown): Validated {
  const tooDeep = nestingProblem(input)
  if (tooDeep) return { ok: false, problems: [tooDeep] }
  const parsed = v.safeParse(documentSchema, input)
  const problems: Problem[] = parsed.success ? [] : parsed.issues.map((issue) => ({ path: v.getDotPath(issue) ?? '', message: issue.message }))
  problems.push(...graphProblems(parsed.success ? parsed.output : input))
  if (problems.length === 0 && parsed.success) return { ok: true, document: parsed.output }
  // The shape check and the graph checks may both see one fault.
  const unique = new Map(problems.map((p) => [`${p.path}\n${p.message}`, p]))
  return { ok: false, problems: [...unique.values()] }
}

// The checks beyond the shape, over a document that may not have it: a part of the
// wrong shape is skipped here (the shape check reports it).
function graphProblems(input: unknown): Problem[] {
  const document = recordOf(input)
  const steps = (Array.isArray(document.steps) ? document.steps : []).map((raw) => {
    const s = recordOf(raw)
    return {
      slug: typeof s.slug === 'string' ? s.slug : undefined,
      type: (STEP_TYPES as readonly unknown[]).includes(s.type) ? s.type as StepType : undefined,
      config: s.config === undefined ? {} : isRecord(s.config) ? s.config : undefined,
      next: Object.entries(recordOf(s.next)).filter((entry): entry is [string, string] => typeof entry[1] === 'string'),
    }
  })
  const problems: Problem[] = []
  const slugs = new Map<string, number>()
  steps.forEach((s, i) => {
    if (s.slug === undefined) return
    if (slugs.has(s.slug)) problems.push({ path: `steps.${i}.slug`, message: `"${s.slug}" is already the slug of steps.${slugs.get(s.slug)}` })
    else slugs.set(s.slug, i)
  })
  if (isRecord(document.inputs)) problems.push(...schemaIssue('inputs', document.inputs))

  steps.forEach((s, i) => {
    const at = `steps.${i}`
    if (s.type && s.config) {
      for (const problem of configRules[s.type]?.(s.config) ?? []) problems.push({ path: `${at}.config.${problem.path}`, message: problem.message })
    }
    for (const [port, target] of s.next) {
      if (s.type && !PORTS[s.type].includes(port)) {
        problems.push({ path: `${at}.next.${port}`, message: `unknown port "${port}" for a ${s.type} step (ports: ${PORTS[s.type].join(', ')})` })
      }
      if (!slugs.has(target)) problems.push({ path: `${at}.next.${port}`, message: `links to "${target}", which is no step's slug` })
    }
    const expressionKeys = s.type ? EXPRESSION_KEYS[s.type] ?? [] : []
    for (const [key, value] of Object.entries(s.config ?? {})) {
      if (expressionKeys.includes(key) && typeof value === 'string') problems.push(...expressionProblems(value, `${at}.config.${key}`))
      else for (const expression of templateExpressions(value)) problems.push(...expressionProblems(expression, `${at}.config.${key}`))
    }
  })

  // Reachability from the first step along every port.
  const first = steps[0]?.slug
  if (first !== undefined) {
    const reached = new Set<string>()
    const queue = [first]
    while (queue.length > 0) {
      const current = queue.shift()!
      if (reached.has(current) || !slugs.has(current)) continue
      reached.add(current)
      queue.push(...steps[slugs.get(current)!]!.next.map(([, target]) => target))
    }
    steps.forEach((s, i) => {
      if (s.slug !== undefined && !reached.has(s.slug)) problems.push({ path: `steps.${i}`, message: `step "${s.slug}" is unreachable from the first step` })
    })
  }

  const tests = Array.isArray(document.tests) ? document.tests : []
  tests.forEach((raw, i) => {
    const t = recordOf(raw)
    for (const [key, kind] of [['mocks', 'mock'], ['answers', 'answer']] as const) {
      for (const named of Object.keys(recordOf(t[key]))) {
        if (!slugs.has(named)) problems.push({ path: `tests.${i}.${key}.${named}`, message: `names "${named}", which is no step's slug (a ${kind} for a missing step)` })
      }
    }
  })
  return problems
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
