// The MCP tools of automation authoring (DESIGN.md "Automation documents"). Each
// tool checks its arguments with valibot and runs SQL operations as the caller;
// documents are validated here before they are stored.
import * as v from 'valibot'
import { toJsonSchema } from '@valibot/to-json-schema'
import type { CallAs } from '../routes/route.ts'
import { documentJsonSchema, validateDocument, type AutomationDocument } from '../core/automations/document.ts'
import { runTest } from '../core/engine/test-runner.ts'
import { triggerBody, triggerPutArgs } from '../routes/triggers.ts'

/** A refusal from SQL, answered as a JSON-RPC error. */
export class Refusal extends Error {
  constructor(readonly code: string, readonly status: number, message: string, readonly data: Record<string, unknown> = {}) {
    super(message)
  }
}

export interface ToolContext {
  call: CallAs
  /** The caller's capabilities, from the request's authentication. */
  developer: boolean
}

export interface ToolResult {
  result: Record<string, unknown>
  /** A problem the caller can correct (an invalid document); reported in the result, not as a protocol error. */
  isError?: boolean
}

interface Tool<S extends v.GenericSchema> {
  name: string
  description: string
  args: S
  /** Needs the developer capability. */
  privileged: boolean
  run: (args: v.InferOutput<S>, context: ToolContext) => Promise<ToolResult>
}

async function sql(context: ToolContext, operation: string, args: Record<string, unknown>): Promise<Record<string, unknown>> {
  const outcome = await context.call(operation, args)
  if (outcome.error) throw new Refusal(outcome.error.code, outcome.error.status, outcome.error.message, outcome.error.data)
  return outcome.body === null ? {} : JSON.parse(outcome.body) as Record<string, unknown>
}

// Any value: an invalid document is a result listing its problems, not invalid
// params. tools/list describes it with the document's JSON Schema.
const documentArgument = v.unknown()

const automationName = v.pipe(v.string(), v.minLength(1), v.maxLength(200))
const versionRef = v.optional(v.union([v.picklist(['latest', 'deployed']), v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(2 ** 31 - 1))]))

// A document that fails validation: every problem with its JSON path.
const invalid = (problems: { path: string; message: string }[]): ToolResult =>
  ({ result: { valid: false, problems }, isError: true })

function tool<S extends v.GenericSchema>(definition: Tool<S>): Tool<v.GenericSchema> {
  return definition as unknown as Tool<v.GenericSchema>
}

export const tools: Tool<v.GenericSchema>[] = [
  tool({
    name: 'automation_list', privileged: false,
    description: 'List the organization\'s automations with their latest and deployed versions.',
    args: v.strictObject({}),
    run: async (_args, context) => ({ result: await sql(context, 'automations_list', {}) }),
  }),
  tool({
    name: 'automation_get', privileged: false,
    description: 'Read an automation version (latest by default, "deployed", or a number) with its document.',
    args: v.strictObject({ name: automationName, version: versionRef }),
    run: async (args, context) => ({
      result: await sql(context, 'automation_get', { name: args.name, version: args.version === undefined ? undefined : String(args.version) }),
    }),
  }),
  tool({
    name: 'automation_validate', privileged: false,
    description: 'Validate an automation document; every problem is reported with its JSON path.',
    args: v.strictObject({ document: documentArgument }),
    run: async (args) => {
      const checked = validateDocument(args.document)
      return checked.ok ? { result: { valid: true, problems: [] } } : invalid(checked.problems)
    },
  }),
  tool({
    name: 'automation_create', privileged: true,
    description: 'Create an automation from a document; it becomes version 1.',
    args: v.strictObject({ document: documentArgument }),
    run: async (args, context) => {
      const checked = validateDocument(args.document)
      if (!checked.ok) return invalid(checked.problems)
      return { result: await sql(context, 'automation_create', { document: checked.document }) }
    },
  }),
  tool({
    name: 'automation_save', privileged: true,
    description: 'Save a new version of an automation; the deployed version stays deployed.',
    args: v.strictObject({ name: automationName, document: documentArgument }),
    run: async (args, context) => {
      const checked = validateDocument(args.document)
      if (!checked.ok) return invalid(checked.problems)
      return { result: await sql(context, 'automation_save', { name: args.name, document: checked.document }) }
    },
  }),
  tool({
    name: 'automation_test', privileged: true,
    description: 'Run the tests of an automation version in mock mode and record the verdict on that version.',
    args: v.strictObject({ name: automationName, version: versionRef }),
    run: async (args, context) => {
      const stored = await sql(context, 'automation_get', { name: args.name, version: args.version === undefined ? undefined : String(args.version) })
      const document = stored.document as AutomationDocument
      const results = []
      for (const test of document.tests ?? []) results.push(await runTest(document, test, String(stored.name)))
      const passed = results.length === 0 ? null : results.every((r) => r.passed)
      const recorded = await sql(context, 'automation_tests_record', { name: stored.name, version: stored.version, passed })
      return { result: { ...recorded, results } }
    },
  }),
  tool({
    name: 'automation_deploy', privileged: true,
    description: 'Deploy an automation version (the latest by default); runs then use it.',
    args: v.strictObject({ name: automationName, version: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(2 ** 31 - 1))) }),
    run: async (args, context) => ({ result: await sql(context, 'automation_deploy', args) }),
  }),
  tool({
    name: 'trigger_get', privileged: false,
    description: 'Read an automation\'s trigger (schedule, webhook or event) with its health: last run, skips, failures.',
    args: v.strictObject({ name: automationName }),
    run: async (args, context) => ({ result: await sql(context, 'triggers_list', args) }),
  }),
  tool({
    name: 'trigger_set', privileged: true,
    description: 'Bind an automation\'s one trigger, as PUT /api/v1/automations/{name}/triggers does: '
      + '{kind: "schedule", cron, timezone?}, {kind: "webhook", rotateToken?} or {kind: "event", event}, each with enabled? '
      + '(default true). A new or rotated webhook token is in the result once; keep it, it is never shown again.',
    args: v.strictObject({ name: automationName, trigger: triggerBody }),
    run: async (args, context) => ({ result: await sql(context, 'trigger_put', triggerPutArgs(args.name, args.trigger)) }),
  }),
  tool({
    name: 'trigger_remove', privileged: true,
    description: 'Remove an automation\'s trigger; a webhook URL dies with it. Succeeds whether or not one was bound.',
    args: v.strictObject({ name: automationName }),
    run: async (args, context) => {
      await sql(context, 'trigger_delete', args)
      return { result: { name: args.name, removed: true } }
    },
  }),
  tool({
    name: 'run_decide_approval', privileged: false,
    description: 'Approve or reject what a waiting run asks approval for.',
    args: v.strictObject({
      runId: v.pipe(v.string(), v.minLength(1)), approvalId: v.pipe(v.string(), v.minLength(1)),
      decision: v.picklist(['approved', 'rejected']), comment: v.optional(v.pipe(v.string(), v.maxLength(2000))),
    }),
    run: async (args, context) => ({ result: await sql(context, 'run_decide_approval', args) }),
  }),
]

/** The tools as tools/list describes them; their argument schemas converted once. */
export const toolList = tools.map((t) => {
  const schema = toJsonSchema(t.args, {
    errorMode: 'ignore', target: 'draft-2020-12',
    overrideSchema: ({ valibotSchema }) => {
      if (valibotSchema !== documentArgument) return undefined
      const { $schema: _dialect, ...document } = documentJsonSchema()
      return document
    },
  }) as Record<string, unknown>
  delete schema.$schema
  return { name: t.name, description: t.description, inputSchema: { ...schema, type: 'object' as const } }
})
