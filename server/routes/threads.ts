// Chat threads, personal (/api/v1/threads) and in a project
// (/api/v1/projects/{id}/threads): one scope per thread, named by the route. A send
// answers 202 and the worker streams the answer into the assistant message.
import * as v from 'valibot'
import type { Input, Route } from './route.ts'
import { integerParam, uuidParam } from '../transport/validation.ts'
import { component } from '../openapi/components.ts'

const timestamp = v.pipe(v.number(), v.integer(), v.description('Epoch milliseconds'))
const reference = v.pipe(v.string(), v.minLength(1), v.maxLength(200))

const generation = component('ThreadGeneration', v.strictObject({
  status: v.pipe(v.picklist(['idle', 'streaming']), v.description('idle once the turn settled, whatever its outcome')),
  lastMessageId: v.pipe(v.nullable(v.string()), v.description('The assistant message of the last turn')),
}))
const thread = component('Thread', v.strictObject({
  id: v.string(), projectId: v.nullable(v.string()), generation, createdAt: timestamp, updatedAt: timestamp,
}))
const message = component('ThreadMessage', v.strictObject({
  id: v.string(), threadId: v.string(), role: v.picklist(['user', 'assistant']),
  status: v.pipe(v.picklist(['pending', 'streaming', 'complete', 'failed', 'stopped']),
    v.description('An answer is pending until a worker takes it, streaming while text arrives, then complete, failed or stopped')),
  parts: v.array(v.strictObject({ type: v.literal('text'), text: v.string() })),
  model: v.nullable(v.string()), providerSlug: v.nullable(v.string()),
  replyTo: v.pipe(v.nullable(v.string()), v.description('An answer: the message it answers')),
  finishReason: v.pipe(v.nullable(v.string()), v.description('stop, length (the output limit was reached), or stopped')),
  errorCode: v.pipe(v.nullable(v.string()),
    v.description('A failed answer: auth_error, connector_error, credit_exhausted, missing_api_key, model_not_found or timeout')),
  error: v.nullable(v.string()), createdAt: timestamp, updatedAt: timestamp,
}))
const page = (rows: v.GenericSchema) => v.strictObject({ page: v.array(rows), isDone: v.boolean(), continueCursor: v.string() })
const listQuery = v.strictObject({ limit: v.optional(integerParam(1)), cursor: v.optional(v.string()) })
// Idempotency-Key on a send: 1-255 printable ASCII characters.
const idempotency = v.object({
  'idempotency-key': v.optional(v.pipe(v.string(), v.regex(/^[\x21-\x7e][\x20-\x7e]{0,254}$/, 'must be 1-255 printable ASCII characters'))),
})
// A personal request may carry projectId; the route, not the body, decides the scope.
const ignoredProject = v.optional(v.pipe(v.string(), v.maxLength(200), v.description('Ignored: the route names the scope')))
const sendFields = {
  content: v.pipe(v.string(), v.minLength(1, 'must not be empty'), v.maxLength(1_000_000)),
  model: v.pipe(reference, v.description('Always explicit: a model of GET /api/v1/models')),
  providerSlug: v.optional(v.pipe(reference, v.description('Needed when several providers serve the model'))),
  maxOutputTokens: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1),
    v.description('Output ceiling of this turn; at most the model\'s maxOutputTokens'))),
}
const sent = component('ThreadSendAccepted', v.strictObject({
  messageId: v.pipe(v.string(), v.description('The message sent')), threadId: v.string(), status: v.literal('accepted'),
  model: v.string(),
  replyMessageId: v.pipe(v.string(), v.description('The assistant message that will carry the answer')),
  poll: v.pipe(v.string(), v.description('The generation route to poll until idle')),
}))
const sendArgs = (input: Input) => ({ ...(input.body as object), ...input.params, idempotencyKey: input.headers?.['idempotency-key'] })

// Every route once per scope; the project form only reaches threads of that project.
function scoped(operationIds: [string, string], make: (prefix: string, params: Record<string, v.GenericSchema>, personal: boolean) => Route): Route[] {
  return [
    { ...make('/api/v1', {}, true), operationId: operationIds[0] },
    { ...make('/api/v1/projects/:id', { id: uuidParam }, false), operationId: operationIds[1] },
  ]
}

export const threadRoutes: Route[] = [
  ...scoped(['createThread', 'createProjectThread'], (prefix, scope, personal) => ({
    kind: 'operation', method: 'POST', path: `${prefix}/threads`, tag: 'Threads', operation: 'thread_create',
    summary: 'Start a thread of your own', status: 201, errors: [403, 404],
    ...(personal ? {} : { params: v.strictObject(scope) }),
    body: v.strictObject(personal ? { projectId: ignoredProject } : {}),
    response: v.strictObject({ id: v.string() }),
    location: (body, input) => (personal ? `/api/v1/threads/${body.id}` : `/api/v1/projects/${String(input.params.id)}/threads/${body.id}`),
    args: (input) => ({ ...input.params }),
  })),
  ...scoped(['listThreads', 'listProjectThreads'], (prefix, scope) => ({
    kind: 'operation', method: 'GET', path: `${prefix}/threads`, tag: 'Threads', operation: 'threads_list', family: 'keyset',
    summary: 'Your threads of this scope, newest first', errors: [404],
    ...(Object.keys(scope).length ? { params: v.strictObject(scope) } : {}), query: listQuery, response: page(thread),
  })),
  ...scoped(['sendThreadMessage', 'sendProjectThreadMessage'], (prefix, scope, personal) => ({
    kind: 'operation', method: 'POST', path: `${prefix}/threads/:threadId/messages`, tag: 'Threads', operation: 'thread_send',
    summary: 'Send a message; 202, and the answer streams into an assistant message', status: 202, buckets: ['start'],
    errors: [400, 403, 404, 409], params: v.strictObject({ ...scope, threadId: reference }), headers: idempotency,
    body: v.strictObject(personal ? { ...sendFields, projectId: ignoredProject } : sendFields),
    response: sent,
    args: (input) => {
      const args: Record<string, unknown> = sendArgs(input)
      delete args.projectId
      return args
    },
  })),
  ...scoped(['getThreadGeneration', 'getProjectThreadGeneration'], (prefix, scope) => ({
    kind: 'operation', method: 'GET', path: `${prefix}/threads/:threadId/generation`, tag: 'Threads', operation: 'thread_generation',
    summary: 'Whether the thread is answering, and its last answer', errors: [404],
    params: v.strictObject({ ...scope, threadId: reference }), response: generation,
  })),
  ...scoped(['stopThreadGeneration', 'stopProjectThreadGeneration'], (prefix, scope) => ({
    kind: 'operation', method: 'DELETE', path: `${prefix}/threads/:threadId/generation`, tag: 'Threads',
    operation: 'thread_generation_stop', summary: 'Stop the turn (also while it is queued); the answer keeps what arrived',
    errors: [404], params: v.strictObject({ ...scope, threadId: reference }), response: generation,
  })),
  ...scoped(['listThreadMessages', 'listProjectThreadMessages'], (prefix, scope) => ({
    kind: 'operation', method: 'GET', path: `${prefix}/threads/:threadId/messages`, tag: 'Threads', operation: 'thread_messages_list',
    family: 'keyset', summary: 'The thread\'s messages, newest first', errors: [404],
    params: v.strictObject({ ...scope, threadId: reference }), query: listQuery, response: page(message),
  })),
  ...scoped(['getThreadMessage', 'getProjectThreadMessage'], (prefix, scope) => ({
    kind: 'operation', method: 'GET', path: `${prefix}/threads/:threadId/messages/:messageId`, tag: 'Threads',
    operation: 'thread_message_get', summary: 'Read a message', errors: [404],
    params: v.strictObject({ ...scope, threadId: reference, messageId: reference }), response: message,
  })),
]
