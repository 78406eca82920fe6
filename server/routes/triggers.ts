// An automation's one trigger: a schedule, a webhook or a platform event. The body is
// checked per kind (a key of another kind is an unknown key); the schedule's cron is
// expanded here by the cron library and handed to SQL, which decides the rest (the
// zone, that it fires, the state table, the token).
import * as v from 'valibot'
import type { Input, Route } from './route.ts'
import { automationName } from './automations.ts'
import { trigger } from './trigger-shape.ts'
import { parseCron } from '../core/schedules/cron.ts'

const enabled = v.optional(v.pipe(v.boolean(), v.description('Default true on every PUT')))
export const triggerBody = v.variant('kind', [
  v.strictObject({
    kind: v.literal('schedule'),
    cron: v.pipe(v.string(), v.minLength(1), v.maxLength(200), v.description('Five fields: minute hour day-of-month month day-of-week')),
    timezone: v.optional(v.nullable(v.pipe(v.string(), v.minLength(1), v.maxLength(200), v.description('IANA zone; UTC when absent')))),
    enabled,
  }),
  v.strictObject({
    kind: v.literal('webhook'),
    rotateToken: v.optional(v.pipe(v.boolean(), v.description('Mints a new token; the old URL dies at once'))),
    enabled,
  }),
  v.strictObject({
    kind: v.literal('event'),
    event: v.pipe(v.string(), v.minLength(1), v.maxLength(100), v.description('A platform event this deployment raises')),
    enabled,
  }),
], 'must be schedule, webhook or event')

const nameParams = v.strictObject({ name: automationName })

// The cron's expansion (or why it has none) comes from the server, after the body's
// shape is checked, so a client can never send either.
export function triggerPutArgs(name: unknown, body: v.InferOutput<typeof triggerBody>): Record<string, unknown> {
  const parsed = body.kind === 'schedule' ? parseCron(body.cron) : {}
  return { ...body, ...parsed, name }
}

const putArgs = (input: Input) => triggerPutArgs(input.params.name, input.body as v.InferOutput<typeof triggerBody>)

export const triggerRoutes: Route[] = [
  {
    kind: 'operation', method: 'GET', path: '/api/v1/automations/:name/triggers', tag: 'Triggers', operation: 'triggers_list',
    family: 'unpaginated', summary: 'The automation\'s trigger (at most one)', errors: [404], params: nameParams,
    response: v.strictObject({ triggers: v.pipe(v.array(trigger), v.maxLength(1)) }),
  },
  {
    kind: 'operation', method: 'PUT', path: '/api/v1/automations/:name/triggers', tag: 'Triggers', operation: 'trigger_put',
    summary: 'Bind, rebind or reconfigure the automation\'s trigger; a webhook\'s token is shown once', errors: [403, 404],
    params: nameParams, body: triggerBody, args: putArgs,
    response: v.strictObject({
      name: v.string(),
      deployed: v.boolean(),
      trigger,
      token: v.optional(v.pipe(v.string(), v.regex(/^[A-Za-z0-9_-]{43,}$/),
        v.description('The webhook URL token, only in the answer that created or rotated it'))),
      revoked: v.optional(v.pipe(v.literal('webhook'), v.description('A webhook was replaced: its URL is dead'))),
    }),
  },
  {
    kind: 'operation', method: 'DELETE', path: '/api/v1/automations/:name/triggers', tag: 'Triggers', operation: 'trigger_delete',
    summary: 'Remove the automation\'s trigger; 204 whether or not one was bound', status: 204, errors: [403, 404],
    params: nameParams,
  },
]
