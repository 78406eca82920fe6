import * as v from 'valibot'
import type { Route } from './route.ts'
import { integerText } from '../transport/validation.ts'
import { component } from '../openapi/components.ts'
import { limit } from '../core/limits.ts'

const timestamp = v.pipe(v.number(), v.integer(), v.description('Epoch milliseconds'))
const rowId = v.pipe(v.string(), v.description('<organizationId>:<stream>:<notificationId>; the key of a mirror\'s upserts'))

const exportRow = component('NotificationExportRow', v.strictObject({
  id: rowId,
  version: v.pipe(v.string(), v.regex(/^[0-9a-f]{64}$/),
    v.description('SHA-256 (hex) of JSON.stringify of the row as received, without version; changes with text, locale or read state')),
  title: v.pipe(v.string(), v.description(`Rendered in the locale; at most ${limit('notification.titleMaxUnits')} UTF-16 code units`)),
  body: v.pipe(v.string(), v.description(`Rendered in the locale; at most ${limit('notification.bodyMaxUnits')} UTF-16 code units`)),
  path: v.pipe(v.string(), v.description('Dashboard destination beginning with the organization\'s slug; resolve against the browser origin')),
  createdAt: timestamp,
  read: v.pipe(v.boolean(), v.description('Whether the recipient read it')),
  kind: v.pipe(v.string(), v.description('task.assigned, comment.mentioned, automation.trigger.paused, or a kind added later')),
}))

const maxPage = limit('page.notifications.maxSize')

export const notificationRoutes: Route[] = [
  {
    kind: 'operation', method: 'GET', path: '/api/v1/notifications/sync', tag: 'Notifications', operation: 'notifications_sync',
    family: 'keyset', errors: [403],
    summary: 'Export one stream of a member\'s notifications, rendered, newest first (needs the notificationExport capability)',
    query: v.strictObject({
      recipientEmail: v.pipe(v.string(), v.maxLength(320, 'must be at most 320 characters'), v.email('must be an email address'),
        v.description('The member whose notifications are exported; matched ignoring case')),
      stream: v.pipe(v.picklist(['personal', 'organization'], 'must be personal or organization'),
        v.description('personal: by descending sequence; organization: by descending creation time, then id')),
      locale: v.optional(v.pipe(v.picklist(['en', 'de', 'fr'], 'must be en, de or fr'),
        v.description('The language of title and body; the organization\'s language when omitted'))),
      // SQL reads the limit as sent: a non-integer is 400 INVALID_LIMIT, not a shape refusal.
      limit: v.optional(v.pipe(integerText(1),
        v.description(`1 to ${maxPage}, default ${maxPage}; a whole number outside is clamped, anything else is 400 INVALID_LIMIT`))),
      cursor: v.optional(v.pipe(v.string(), v.description('The previous continueCursor, unchanged; omitted on the first page'))),
    }),
    response: v.strictObject({
      recipientId: v.pipe(v.nullable(v.string()),
        v.description('null (with an empty, final page) when the email names no single active member with a verified email')),
      page: v.array(exportRow), isDone: v.boolean(), continueCursor: v.string(),
    }),
  },
  {
    kind: 'operation', method: 'POST', path: '/api/v1/notifications/:notificationId/read', tag: 'Notifications',
    operation: 'notification_read', errors: [404],
    summary: 'Mark one of your own notifications read (again: nothing changes)',
    params: v.strictObject({
      notificationId: v.pipe(v.string(), v.minLength(1), v.maxLength(200),
        v.description('The notification\'s id, or its export row id <organizationId>:<stream>:<notificationId>')),
    }),
    response: v.strictObject({ notification: v.strictObject({ id: rowId, read: v.literal(true), readAt: timestamp }) }),
  },
]
