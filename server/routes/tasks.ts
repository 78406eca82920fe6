// Tasks on a project's board and their comments, under the project (the current
// routes) and flat under /api/v1/tasks (the earlier variant, kept for its clients).
// Lengths are UTF-16 code units, as JavaScript counts them; SQL holds the same limits
// for the writes that do not come through here (a run's action steps).
import * as v from 'valibot'
import type { Input, Route } from './route.ts'
import { integerParam, uuidParam } from '../transport/validation.ts'
import { component } from '../openapi/components.ts'
import { limit } from '../core/limits.ts'

const timestamp = v.pipe(v.number(), v.integer(), v.description('Epoch milliseconds'))
const units = (max: number) => v.maxLength<string, number, string>(max, `at most ${max} UTF-16 code units`)
const required = (max: number) => v.pipe(v.string(), v.trim(), v.minLength(1, 'must not be blank'), units(max))
const reference = v.pipe(v.string(), v.minLength(1), v.maxLength(200))

export const TASK_STATUSES = ['backlog', 'todo', 'in_progress', 'in_review', 'done', 'cancelled'] as const
const taskStatus = component('TaskStatus', v.picklist(TASK_STATUSES))
const externalState = v.picklist(['open', 'closed'], 'must be open or closed')

const assignee = component('TaskAssignee', v.variant('type', [
  v.strictObject({ type: v.literal('user'), id: v.string(), name: v.string() }),
  v.strictObject({ type: v.literal('automation'), name: v.string() }),
]))
const task = component('Task', v.strictObject({
  id: v.string(), projectId: v.string(),
  identifier: v.pipe(v.nullable(v.string()), v.description('The project key, a dash and the number; null in a keyless project')),
  number: v.pipe(v.number(), v.integer()),
  externalSystem: v.string(), externalId: v.string(), title: v.string(), description: v.nullable(v.string()),
  labels: v.pipe(v.array(v.string()), v.description('In the order last sent, with the project catalog\'s spelling')),
  externalUrl: v.nullable(v.string()), externalState: v.nullable(externalState), status: taskStatus,
  assignee: v.nullable(assignee),
  review: v.optional(v.strictObject({ requestedAt: timestamp, requestedBy: v.optional(v.string()), actor: v.optional(v.string()) })),
  archivedAt: v.optional(timestamp), createdAt: timestamp, updatedAt: timestamp,
}))
const comment = component('TaskComment', v.strictObject({
  id: v.string(), taskId: v.string(),
  authorType: v.pipe(v.picklist(['user', 'automation', 'agent']), v.description('Who wrote it: a person\'s key, a run\'s action step, an agent')),
  authorId: v.nullable(v.string()), authorName: v.nullable(v.string()),
  runId: v.pipe(v.nullable(v.string()), v.description('The run whose action step wrote it')),
  body: v.string(),
  mentions: v.pipe(v.array(v.string()), v.description('Ids of the organization members the body mentions')),
  createdAt: timestamp,
}))

const createFields = {
  externalSystem: required(limit('task.externalKeyMaxUnits')),
  externalId: required(limit('task.externalKeyMaxUnits')),
  title: required(limit('task.titleMaxUnits')),
  description: v.optional(v.pipe(v.string(), units(limit('task.descriptionMaxUnits')))),
  labels: v.optional(v.pipe(v.array(required(limit('task.labelMaxUnits'))),
    v.maxLength(limit('task.maxLabels'), `at most ${limit('task.maxLabels')} labels`))),
  externalUrl: v.optional(v.pipe(v.string(), v.maxLength(2048),
    v.check((value) => /^https?:\/\/[^/?#\s@]+([/?#]\S*)?$/i.test(value) && URL.canParse(value), 'must be an absolute http(s) URL'))),
  setupFolderName: v.optional(v.pipe(v.string(), v.trim(), v.minLength(1, 'must not be blank'), v.maxLength(128),
    v.description('A root folder, matched ignoring case; its id becomes externalUrl'))),
  externalState: v.optional(externalState),
  automationSlug: v.optional(v.pipe(reference, v.description('The automation that becomes the assignee'))),
  runWorkflowSlug: v.optional(v.pipe(reference, v.description('A deployed automation started on a newly created task'))),
}
// setupFolderName stores a folder as the externalUrl, so the two never come together.
// partialCheck runs even when other fields have problems, so all are reported at once.
type UrlFields = { externalUrl?: string; setupFolderName?: string }
const withoutBoth = (schema: v.GenericSchema<UrlFields>) => v.pipe(schema, v.forward(
  v.partialCheck([['externalUrl'], ['setupFolderName']],
    (body: UrlFields) => body.externalUrl === undefined || body.setupFolderName === undefined,
    'not allowed together with externalUrl'),
  ['setupFolderName']))
const projectCreateBody = withoutBoth(v.strictObject(createFields))
const flatCreateBody = withoutBoth(v.strictObject({ ...createFields, projectId: uuidParam }))

const createResponse = v.strictObject({
  task: v.strictObject({ id: v.string(), created: v.boolean() }),
  runId: v.optional(v.pipe(v.nullable(v.string()), v.description('With runWorkflowSlug: the run started, or null'))),
  executionId: v.optional(v.pipe(v.nullable(v.string()), v.description('Deprecated copy of runId'))),
})
const startResponse = v.strictObject({
  started: v.boolean(),
  runId: v.nullable(v.string()),
  executionId: v.pipe(v.nullable(v.string()), v.description('Deprecated copy of runId')),
  reason: v.optional(v.pipe(v.picklist(['already_running', 'not_started']),
    v.description('already_running names the running run; not_started: no deployed automation of that name'))),
})
const commentsQuery = v.strictObject({ limit: v.optional(integerParam(1)), cursor: v.optional(v.string()) })
const commentsResponse = v.strictObject({ comments: v.array(comment), isDone: v.boolean(), continueCursor: v.string() })
const commentBody = v.strictObject({ body: v.pipe(v.string(), v.check((text) => text.trim() !== '', 'must not be blank'),
  units(limit('comment.bodyMaxUnits')),
  v.description('Mention a member with @ and their email address, or a handle (name without spaces, or email before the @) that names exactly one member')) })

const projectParams = v.strictObject({ id: uuidParam })
const taskParams = v.strictObject({ id: uuidParam, taskId: reference })
const flatTaskParams = v.strictObject({ taskId: reference })

// The flat create names its project in the body; the SQL function takes it as `id`.
const flatCreateArgs = (input: Input) => {
  const { projectId, ...body } = input.body as { projectId: string }
  return { ...body, id: projectId }
}

export const taskRoutes: Route[] = [
  {
    kind: 'operation', method: 'POST', path: '/api/v1/projects/:id/tasks', tag: 'Tasks', operation: 'task_create',
    operationId: 'createTask',
    summary: 'Create a task by (externalSystem, externalId), or update the task holding that key (200, created:false)',
    errors: [400, 403, 404], params: projectParams, body: projectCreateBody, response: createResponse,
    status: (body) => (body.task?.created ? 201 : 200),
    location: (body, input) => (body.task?.created ? `/api/v1/projects/${String(input.params.id)}/tasks/${body.task.id}` : undefined),
  },
  {
    kind: 'operation', method: 'GET', path: '/api/v1/projects/:id/tasks', tag: 'Tasks', operation: 'tasks_list',
    operationId: 'listTasks', family: 'keyset', summary: 'A project\'s tasks newest first, by status or natural key',
    errors: [404], params: projectParams,
    query: v.strictObject({
      limit: v.optional(integerParam(1)), cursor: v.optional(v.string()), status: v.optional(taskStatus),
      externalSystem: v.optional(required(limit('task.externalKeyMaxUnits'))),
      externalId: v.optional(required(limit('task.externalKeyMaxUnits'))),
      archived: v.optional(v.picklist(['include', 'only'], 'must be include or only')),
    }),
    response: v.strictObject({ tasks: v.array(task), isDone: v.boolean(), continueCursor: v.string() }),
  },
  {
    kind: 'operation', method: 'GET', path: '/api/v1/projects/:id/tasks/:taskId', tag: 'Tasks', operation: 'task_get',
    operationId: 'getTask', summary: 'Read a task', errors: [404], params: taskParams, response: v.strictObject({ task }),
  },
  {
    kind: 'operation', method: 'PATCH', path: '/api/v1/projects/:id/tasks/:taskId', tag: 'Tasks', operation: 'task_update',
    operationId: 'updateTask',
    summary: 'Move a task on the board (a person\'s move, which ends the mirror\'s park), archive or restore it, or assign it',
    errors: [400, 403, 404], params: taskParams,
    body: v.strictObject({
      status: v.optional(taskStatus),
      archived: v.optional(v.boolean()),
      assignee: v.optional(v.nullable(v.variant('type', [
        v.strictObject({ type: v.literal('user'), id: uuidParam }),
        v.strictObject({ type: v.literal('automation'), name: reference }),
      ], 'must be a user or an automation'))),
    }),
    response: v.strictObject({ task }),
  },
  {
    kind: 'operation', method: 'POST', path: '/api/v1/projects/:id/tasks/:taskId/start', tag: 'Tasks', operation: 'task_start',
    operationId: 'startTaskWorkflow', summary: 'Start a deployed workflow on a task (edit access; no developer capability needed)',
    buckets: ['start'], errors: [403, 404, 409], params: taskParams,
    body: v.strictObject({ workflowSlug: reference }), response: startResponse,
  },
  {
    kind: 'operation', method: 'POST', path: '/api/v1/projects/:id/tasks/:taskId/review', tag: 'Tasks', operation: 'task_review',
    operationId: 'reviewTask', summary: 'Park a task at in_review by a person\'s hand; naming an actor needs the act-as capability',
    errors: [403, 404], params: taskParams,
    body: v.strictObject({ actor: v.optional(v.pipe(v.string(), v.trim(), v.minLength(1), v.maxLength(320))) }),
    response: v.strictObject({ task }),
  },
  {
    kind: 'operation', method: 'GET', path: '/api/v1/projects/:id/tasks/:taskId/comments', tag: 'Tasks',
    operation: 'task_comments_list', operationId: 'listTaskComments', family: 'keyset',
    summary: 'A task\'s comments: the newest page first, chronological inside each page', errors: [404],
    params: taskParams, query: commentsQuery, response: commentsResponse,
  },
  {
    kind: 'operation', method: 'POST', path: '/api/v1/projects/:id/tasks/:taskId/comments', tag: 'Tasks',
    operation: 'task_comment_create', operationId: 'createTaskComment', summary: 'Comment on a task as the key\'s user (project readers may)',
    status: 201, errors: [400, 403, 404], params: taskParams, body: commentBody,
    response: v.strictObject({ comment: v.strictObject({ id: v.string() }) }),
  },
  // The earlier flat variant.
  {
    kind: 'operation', method: 'POST', path: '/api/v1/tasks', tag: 'Tasks', operation: 'task_create', operationId: 'createTaskFlat',
    summary: 'Create a task in the project named by projectId (earlier variant)', errors: [400, 403, 404],
    body: flatCreateBody, response: createResponse, args: flatCreateArgs,
    status: (body) => (body.task?.created ? 201 : 200),
    location: (body) => (body.task?.created ? `/api/v1/tasks/${body.task.id}` : undefined),
  },
  {
    kind: 'operation', method: 'GET', path: '/api/v1/tasks/:taskId', tag: 'Tasks', operation: 'task_get', operationId: 'getTaskFlat',
    summary: 'Read a task (earlier variant)', errors: [404], params: flatTaskParams, response: v.strictObject({ task }),
  },
  {
    kind: 'operation', method: 'POST', path: '/api/v1/tasks/:taskId/start', tag: 'Tasks', operation: 'task_start',
    operationId: 'startTaskWorkflowFlat', buckets: ['start'], errors: [403, 404],
    summary: 'Start a workflow on a task (earlier variant: no deployed automation answers started:false, not_started)',
    params: flatTaskParams, body: v.strictObject({ workflowSlug: reference }), response: startResponse,
    args: (input) => ({ ...(input.body as object), ...input.params, flat: true }),
  },
  {
    kind: 'operation', method: 'GET', path: '/api/v1/tasks/:taskId/comments', tag: 'Tasks', operation: 'task_comments_list',
    operationId: 'listTaskCommentsFlat', family: 'keyset', summary: 'A task\'s comments (earlier variant)', errors: [404],
    params: flatTaskParams, query: commentsQuery, response: commentsResponse,
  },
  {
    kind: 'operation', method: 'POST', path: '/api/v1/tasks/:taskId/comments', tag: 'Tasks', operation: 'task_comment_create',
    operationId: 'createTaskCommentFlat', summary: 'Comment on a task (earlier variant)', status: 201, errors: [400, 403, 404],
    params: flatTaskParams, body: commentBody, response: v.strictObject({ comment: v.strictObject({ id: v.string() }) }),
  },
]
