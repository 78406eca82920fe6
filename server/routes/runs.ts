import * as v from 'valibot'
import type { Route } from './route.ts'
import { integerParam, jsonObject, uuidParam } from '../transport/validation.ts'
import { automationName } from './automations.ts'
import { component } from '../openapi/components.ts'
import { FAILURE_CODES, STEP_TYPES } from '../core/automations/document.ts'

const reference = v.pipe(v.string(), v.minLength(1), v.maxLength(200))
const int = v.pipe(v.number(), v.integer())
const timestamp = v.pipe(v.number(), v.integer(), v.description('Epoch milliseconds'))

export const runStatus = component('RunStatus', v.picklist(['queued', 'running', 'waiting', 'completed', 'failed', 'cancelled']))
export const waitingFor = component('RunWaitingFor', v.pipe(v.picklist(['approval', 'ask', 'agent', 'repeat']),
  v.description('Only approval and ask need a person')))
export const failureCode = component('RunFailureCode', v.picklist(FAILURE_CODES))
const runMode = component('RunMode', v.picklist(['live', 'mock']))
const startedBy = v.pipe(v.string(), v.regex(/^(user|trigger):/), v.description('user:<id>, or trigger:<id> for a trigger start'))
const startedVia = v.picklist(['schedule', 'webhook', 'event', 'task'])
const traceEntry = component('RunTraceEntry', v.strictObject({
  slug: v.string(), type: v.picklist(STEP_TYPES), port: v.optional(v.string()), startedAt: timestamp, finishedAt: timestamp,
  output: v.optional(v.unknown()), error: v.optional(v.string()),
}))
// Each effect type carries its own facts beside the step that produced it.
const effect = component('RunEffect', v.looseObject({ step: v.string(), type: v.string() }))

// A list row: unset fields are omitted; include adds output, trace and effects.
const runSummary = component('RunSummary', v.strictObject({
  runId: v.string(), name: v.string(), version: int, mode: runMode, status: runStatus,
  waitingFor: v.optional(waitingFor), detail: v.optional(v.string()), failureCode: v.optional(failureCode),
  projectId: v.optional(v.string()), startedBy: v.optional(startedBy), startedVia: v.optional(startedVia),
  createdAt: timestamp, startedAt: v.optional(timestamp), finishedAt: v.optional(timestamp),
  output: v.optional(v.unknown()), trace: v.optional(v.array(traceEntry)), effects: v.optional(v.array(effect)),
}))
// The full read: the state fields are always there, null when unset.
const run = component('Run', v.strictObject({
  runId: v.string(), name: v.string(), version: int, mode: runMode, status: runStatus,
  waitingFor: v.nullable(waitingFor), detail: v.nullable(v.string()), failureCode: v.nullable(failureCode),
  projectId: v.optional(v.string()), startedBy: v.optional(startedBy), startedVia: v.optional(startedVia),
  createdAt: timestamp, startedAt: v.optional(timestamp), finishedAt: v.nullable(timestamp),
  input: v.record(v.string(), v.unknown()), output: v.unknown(), trace: v.array(traceEntry), effects: v.array(effect),
}))
// The read with fields: exactly the named keys, null where the run has no value.
const runFields = component('RunFields', v.pipe(v.strictObject({
  runId: v.optional(v.string()), name: v.optional(v.string()), version: v.optional(int), mode: v.optional(runMode),
  status: v.optional(runStatus), waitingFor: v.optional(v.nullable(waitingFor)), detail: v.optional(v.nullable(v.string())),
  failureCode: v.optional(v.nullable(failureCode)), projectId: v.optional(v.nullable(v.string())),
  startedBy: v.optional(v.nullable(startedBy)), startedVia: v.optional(v.nullable(startedVia)),
  createdAt: v.optional(timestamp), startedAt: v.optional(v.nullable(timestamp)), finishedAt: v.optional(v.nullable(timestamp)),
  input: v.optional(v.record(v.string(), v.unknown())), output: v.optional(v.unknown()),
  trace: v.optional(v.array(traceEntry)), effects: v.optional(v.array(effect)),
}), v.minEntries(1)))
const askField = component('AskField', v.looseObject({
  name: v.string(), type: v.optional(v.picklist(['string', 'number', 'boolean'])), required: v.optional(v.boolean()),
}))
const ask = component('Ask', v.strictObject({
  askId: v.string(), runId: v.string(), step: v.string(), question: v.string(), fields: v.array(askField), createdAt: timestamp,
}))
const started = component('RunStarted', v.strictObject({ runId: v.string(), version: int, name: v.string(), mode: runMode }))
const listQuery = v.strictObject({
  limit: v.optional(integerParam(1)),
  cursor: v.optional(v.string()),
  include: v.optional(v.pipe(v.string(), v.regex(/^(output|trace|effects)(,(output|trace|effects))*$/, 'must list output, trace or effects, comma-separated'))),
})
const listResponse = v.strictObject({
  runs: v.array(runSummary), isDone: v.boolean(), continueCursor: v.string(),
  cursor: v.optional(v.pipe(v.string(), v.description('The same token as continueCursor while more pages remain (deprecated name)'))),
})
const startBody = {
  input: v.optional(jsonObject),
  mode: v.optional(v.picklist(['live', 'mock'], 'must be live or mock')),
}
// Idempotency-Key: 1-255 printable ASCII characters.
const idempotency = v.object({
  'idempotency-key': v.optional(v.pipe(v.string(), v.regex(/^[\x21-\x7e][\x20-\x7e]{0,254}$/, 'must be 1-255 printable ASCII characters'))),
})
const startArgs = (input: { params: Record<string, unknown>; body: unknown; headers?: Record<string, unknown> }) => ({
  ...(input.body as object), ...input.params, idempotencyKey: input.headers?.['idempotency-key'],
})

// The run routes exist at the organization level and under a project; the project
// form only reaches runs of that project.
function twins(operationIds: [string, string], make: (prefix: string, params: Record<string, v.GenericSchema>) => Route): Route[] {
  return [
    { ...make('/api/v1', {}), operationId: operationIds[0] },
    { ...make('/api/v1/projects/:id', { id: uuidParam }), operationId: operationIds[1] },
  ]
}

export const runRoutes: Route[] = [
  {
    kind: 'operation', method: 'POST', path: '/api/v1/automations/:name/runs', tag: 'Runs', operation: 'run_start', operationId: 'startRun',
    summary: 'Start a run of the deployed version; 202 with its id', status: 202, buckets: ['start'], errors: [403, 404, 409],
    params: v.strictObject({ name: automationName }), headers: idempotency,
    body: v.strictObject({ ...startBody, projectId: v.optional(uuidParam) }), response: started, args: startArgs,
  },
  {
    kind: 'operation', method: 'POST', path: '/api/v1/projects/:id/automations/:name/runs', tag: 'Runs', operation: 'run_start', operationId: 'startProjectRun',
    summary: 'Start a run in a project; 202 with its id', status: 202, buckets: ['start'], errors: [403, 404, 409],
    params: v.strictObject({ id: uuidParam, name: automationName }), headers: idempotency,
    body: v.strictObject(startBody), response: started, args: startArgs,
  },
  {
    kind: 'operation', method: 'GET', path: '/api/v1/runs', tag: 'Runs', operation: 'runs_list', operationId: 'listRuns', family: 'keyset',
    summary: 'Runs across the organization\'s automations, newest first', query: listQuery, response: listResponse,
  },
  {
    kind: 'operation', method: 'GET', path: '/api/v1/automations/:name/runs', tag: 'Runs', operation: 'runs_list', operationId: 'listAutomationRuns', family: 'keyset',
    summary: 'Runs of an automation, newest first', errors: [404], params: v.strictObject({ name: automationName }),
    query: listQuery, response: listResponse,
  },
  {
    kind: 'operation', method: 'GET', path: '/api/v1/projects/:id/runs', tag: 'Runs', operation: 'runs_list', operationId: 'listProjectRuns', family: 'keyset',
    summary: 'Runs in a project, newest first', errors: [404], params: v.strictObject({ id: uuidParam }),
    query: listQuery, response: listResponse,
  },
  {
    kind: 'operation', method: 'GET', path: '/api/v1/projects/:id/automations/:name/runs', tag: 'Runs', operation: 'runs_list', operationId: 'listProjectAutomationRuns',
    family: 'keyset', summary: 'Runs of an automation in a project, newest first', errors: [404],
    params: v.strictObject({ id: uuidParam, name: automationName }), query: listQuery, response: listResponse,
  },
  ...twins(['getRun', 'getProjectRun'], (prefix, scope) => ({
    kind: 'operation', method: 'GET', path: `${prefix}/runs/:runId`, tag: 'Runs', operation: 'run_get',
    summary: 'Read a run, or only the named fields', errors: [404],
    params: v.strictObject({ ...scope, runId: reference }),
    query: v.strictObject({ fields: v.optional(v.pipe(v.string(), v.minLength(1))) }),
    response: v.union([run, runFields]),
  })),
  ...twins(['cancelRun', 'cancelProjectRun'], (prefix, scope) => ({
    kind: 'operation', method: 'POST', path: `${prefix}/runs/:runId/cancel`, tag: 'Runs', operation: 'run_cancel',
    summary: 'Cancel a live run (it stops at its next step boundary)', errors: [403, 404, 409],
    params: v.strictObject({ ...scope, runId: reference }),
    response: v.strictObject({ runId: v.string(), status: runStatus, cancelRequested: v.literal(true) }),
  })),
  ...twins(['deleteRun', 'deleteProjectRun'], (prefix, scope) => ({
    kind: 'operation', method: 'DELETE', path: `${prefix}/runs/:runId`, tag: 'Runs', operation: 'run_delete',
    summary: 'Delete a finished run', status: 204, errors: [403, 404, 409], params: v.strictObject({ ...scope, runId: reference }),
  })),
  ...twins(['getRunAsk', 'getProjectRunAsk'], (prefix, scope) => ({
    kind: 'operation', method: 'GET', path: `${prefix}/runs/:runId/ask`, tag: 'Runs', operation: 'run_ask',
    summary: 'The question a waiting run asks', errors: [404], params: v.strictObject({ ...scope, runId: reference }),
    response: ask,
  })),
  ...twins(['answerRunAsk', 'answerProjectRunAsk'], (prefix, scope) => ({
    kind: 'operation', method: 'POST', path: `${prefix}/runs/:runId/asks/:askId`, tag: 'Runs', operation: 'run_answer_ask',
    summary: 'Answer the question of a waiting run (actor needs the act-as capability)', errors: [403, 404, 409],
    params: v.strictObject({ ...scope, runId: reference, askId: reference }),
    body: v.strictObject({ answer: jsonObject, actor: v.optional(v.pipe(v.string(), v.minLength(1), v.maxLength(320))) }),
    response: v.strictObject({ runId: v.string(), askId: v.string(), status: v.literal('queued') }),
  })),
  ...twins(['decideRunApproval', 'decideProjectRunApproval'], (prefix, scope) => ({
    kind: 'operation', method: 'POST', path: `${prefix}/runs/:runId/approvals/:approvalId`, tag: 'Runs',
    operation: 'run_decide_approval', summary: 'Decide an approval a run waits for', errors: [403, 404, 409],
    params: v.strictObject({ ...scope, runId: reference, approvalId: reference }),
    body: v.strictObject({ decision: v.picklist(['approved', 'rejected'], 'must be approved or rejected'), comment: v.optional(v.pipe(v.string(), v.maxLength(2000))) }),
    response: v.strictObject({ runId: v.string(), approvalId: v.string(), decision: v.picklist(['approved', 'rejected']), status: v.literal('queued') }),
  })),
]
