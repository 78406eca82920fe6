// Notifications written as the rules that notify write them (on the owner's
// connection), and the export's query and version as a client computes them.
import { createHash, randomUUID } from 'node:crypto'
import type { Sql } from '../../server/core/db/connection.ts'
import { acme, person } from './fixtures.ts'
import type { WorldOptions } from './world.ts'

export const SYNC = '/api/v1/notifications/sync'

export interface ExportRow {
  id: string
  version: string
  title: string
  body: string
  path: string
  createdAt: number
  read: boolean
  kind: string
}

export interface ExportPage {
  recipientId: string | null
  page: ExportRow[]
  isDone: boolean
  continueCursor: string
}

/** The export's URL for a query (values sent as given, so a test can send any text). */
export const syncPath = (query: Record<string, string | number | undefined>): string =>
  `${SYNC}?${new URLSearchParams(Object.entries(query).flatMap(([k, v]): [string, string][] => (v === undefined ? [] : [[k, String(v)]])))}`

/** What a client computes from a row it received: sha256 of JSON.stringify of the row without version. */
export function versionOf(row: ExportRow): string {
  const { version: _, ...rest } = row
  return createHash('sha256').update(JSON.stringify(rest)).digest('hex')
}

/** The params the tasks family writes for task.assigned and comment.mentioned. */
export const taskParams = (extra: Record<string, unknown> = {}): Record<string, unknown> => ({
  projectId: randomUUID(), projectName: 'Alpha', taskId: randomUUID(), taskIdentifier: 'ALP-7',
  taskTitle: 'Fix the login page', ...extra,
})

export interface NotificationSeed {
  recipient: string
  kind?: string
  stream?: 'personal' | 'organization'
  params?: Record<string, unknown>
}

/** Inserts a notification at app.now() (pin the clock to place it); its id and sequence. */
export async function notify(owner: Sql, org: string, n: NotificationSeed): Promise<{ id: string; seq: number }> {
  const [row] = await owner<{ id: string; seq: number }[]>`
    insert into app.notifications (organization_id, recipient_id, kind, stream, params)
    values (${org}, ${n.recipient}, ${n.kind ?? 'task.assigned'}, ${n.stream ?? 'personal'},
            ${owner.json((n.params ?? taskParams({ assignedByName: 'Olive' })) as never)})
    returning id, seq::integer as seq`
  return row!
}

/**
 * acme's people plus the recipients the export must not resolve (an unverified
 * email, a disabled membership), and eddie holding a live export grant.
 */
export const exportSeed = (): NonNullable<WorldOptions['seed']> => ({
  ...acme(),
  users: [
    ...acme().users!,
    { ...person('una@acme.test', [{ org: 'acme', role: 'member' }]), emailVerified: false },
    person('dora@acme.test', [{ org: 'acme', role: 'member', disabled: true }]),
  ],
  grants: [{ org: 'acme', email: 'eddie@acme.test', competence: 'notifications.export', expiresAt: null }],
})
