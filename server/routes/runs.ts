import * as v from 'valibot'
import type { Route } from './route.ts'
import { integerParam, uuidParam } from '../transport/validation.ts'
import { automationName } from './automations.ts'

const reference = v.pipe(v.string(), v.minLength(1), v.maxLength(200))
const runSummary = v.object({
  runId: v.string(), name: v.string(), version: v.number(), mode: v.picklist(['live', 'mock']), status: v.string(),
  waitingFor: v.optional(v.string()), detail: v.optional(v.string()), failureCode: v.optional(v.string()),
  projectId: v.optional(v.string()), startedBy: v.optional(v.string()), startedVia: v.optional(v.string()),
  createdAt: v.number(), startedAt: v.optional(v.number()), finishedAt: v.optional(v.number()),
  output: v.optional(v.unknown()), trace: v.optional(v.array(v.unknown())), effects: v.optional(v.array(v.unknown())),
})
const started = v.object({ runId: v.string(), version: v.number(), name: v.string(), mode: v.picklist(['live', 'mock']) })
const listQuery = v.strictObject({
  limit: v.optional(integerParam(1)),
  cursor: v.optional(v.string()),
  include: v.optional(v.pipe(v.string(), v.regex(/^(output|trace|effects)(,(output|trace|effects))*$/, 'must list output, trace or effects, comma-separated'))),
})
const listResponse = v.object({ runs: v.array(runSummary), isDone: v.boolean(), continueCursor: v.string() })
const startBody = {
  input: v.optional(v.record(v.string(), v.unknown())),
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
function twins(make: (prefix: string, params: Record<string, v.GenericSchema>) => Route): Route[] {
  return [make('/api/v1', {}), make('/api/v1/projects/:id', { id: uuidParam })]
}

export const runRoutes: Route[] = [
  {
    kind: 'operation', method: 'POST', path: '/api/v1/automations/:name/runs', tag: 'Runs', operation: 'run_start',
    summary: 'Start a run of the deployed version; 202 with its id', status: 202, buckets: ['start'], errors: [403, 404, 409],
    params: v.strictObject({ name: automationName }), headers: idempotency,
    body: v.strictObject({ ...startBody, projectId: v.optional(uuidParam) }), response: started, args: startArgs,
  },
  {
    kind: 'operation', method: 'POST', path: '/api/v1/projects/:id/automations/:name/runs', tag: 'Runs', operation: 'run_start',
    summary: 'Start a run in a project; 202 with its id', status: 202, buckets: ['start'], errors: [403, 404, 409],
    params: v.strictObject({ id: uuidParam, name: automationName }), headers: idempotency,
    body: v.strictObject(startBody), response: started, args: startArgs,
  },
  {
    kind: 'operation', method: 'GET', path: '/api/v1/runs', tag: 'Runs', operation: 'runs_list', family: 'keyset',
    summary: 'Runs across the organization\'s automations, newest first', query: listQuery, response: listResponse,
  },
  {
    kind: 'operation', method: 'GET', path: '/api/v1/automations/:name/runs', tag: 'Runs', operation: 'runs_list', family: 'keyset',
    summary: 'Runs of an automation, newest first', errors: [404], params: v.strictObject({ name: automationName }),
    query: listQuery, response: listResponse,
  },
  {
    kind: 'operation', method: 'GET', path: '/api/v1/projects/:id/runs', tag: 'Runs', operation: 'runs_list', family: 'keyset',
    summary: 'Runs in a project, newest first', errors: [404], params: v.strictObject({ id: uuidParam }),
    query: listQuery, response: listResponse,
  },
  {
    kind: 'operation', method: 'GET', path: '/api/v1/projects/:id/automations/:name/runs', tag: 'Runs', operation: 'runs_list',
    family: 'keyset', summary: 'Runs of an automation in a project, newest first', errors: [404],
    params: v.strictObject({ id: uuidParam, name: automationName }), query: listQuery, response: listResponse,
  },
  ...twins((prefix, scope) => ({
    kind: 'operation', method: 'GET', path: `${prefix}/runs/:runId`, tag: 'Runs', operation: 'run_get',
    summary: 'Read a run, or only the named fields', errors: [404],
    params: v.strictObject({ ...scope, runId: reference }),
    query: v.strictObject({ fields: v.optional(v.pipe(v.string(), v.minLength(1))) }),
    response: v.record(v.string(), v.unknown()),
  })),
  ...twins((prefix, scope) => ({
    kind: 'operation', method: 'POST', path: `${prefix}/runs/:runId/cancel`, tag: 'Runs', operation: 'run_cancel',
    summary: 'Cancel a live run (it stops at its next step boundary)', errors: [403, 404, 409],
    params: v.strictObject({ ...scope, runId: reference }),
    response: v.object({ runId: v.string(), status: v.string(), cancelRequested: v.boolean() }),
  })),
  ...twins((prefix, scope) => ({
    kind: 'operation', method: 'DELETE', path: `${prefix}/runs/:runId`, tag: 'Runs', operation: 'run_delete',
    summary: 'Delete a finished run', status: 204, errors: [403, 404, 409], params: v.strictObject({ ...scope, runId: reference }),
  })),
  ...twins((prefix, scope) => ({
    kind: 'operation', method: 'GET', path: `${prefix}/runs/:runId/ask`, tag: 'Runs', operation: 'run_ask',
    summary: 'The question a waiting run asks', errors: [404], params: v.strictObject({ ...scope, runId: reference }),
    response: v.object({ askId: v.string(), runId: v.string(), step: v.string(), question: v.string(), fields: v.array(v.unknown()), createdAt: v.number() }),
  })),
  ...twins((prefix, scope) => ({
    kind: 'operation', method: 'POST', path: `${prefix}/runs/:runId/asks/:askId`, tag: 'Runs', operation: 'run_answer_ask',
    summary: 'Answer the question of a waiting run (actor needs the act-as capability)', errors: [403, 404, 409],
    params: v.strictObject({ ...scope, runId: reference, askId: reference }),
    body: v.strictObject({ answer: v.record(v.string(), v.unknown()), actor: v.optional(v.pipe(v.string(), v.minLength(1), v.maxLength(320))) }),
    response: v.object({ runId: v.string(), askId: v.string(), status: v.string() }),
  })),
  ...twins((prefix, scope) => ({
    kind: 'operation', method: 'POST', path: `${prefix}/runs/:runId/approvals/:approvalId`, tag: 'Runs',
    operation: 'run_decide_approval', summary: 'Decide an approval a run waits for', errors: [403, 404, 409],
    params: v.strictObject({ ...scope, runId: reference, approvalId: reference }),
    body: v.strictObject({ decision: v.picklist(['approved', 'rejected'], 'must be approved or rejected'), comment: v.optional(v.pipe(v.string(), v.maxLength(2000))) }),
    response: v.object({ runId: v.string(), approvalId: v.string(), decision: v.string(), status: v.string() }),
  })),
]
