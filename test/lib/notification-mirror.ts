// A client's mirror of one recipient's notifications, kept by the spec's procedure
// ("Notification export"): scan each stream from the first page, upsert by id
// comparing version, stop at isDone true (never sending the empty final cursor),
// retract rows absent from a scan only after both streams finished, and keep the old
// mirror on any failed page.
import type { Response } from './service.ts'
import { syncPath, type ExportPage, type ExportRow } from './notifications.ts'

export const STREAMS = ['personal', 'organization'] as const

export type SyncOutcome =
  | { ok: true; recipientId: string | null; upserted: number; retracted: number; requests: number }
  | { ok: false; status: number; code: string | undefined; requests: number }

export class NotificationMirror {
  /** The mirror: export rows by id. */
  readonly rows = new Map<string, ExportRow>()

  constructor(
    private readonly get: (path: string) => Promise<Response>,
    private readonly recipientEmail: string,
    private readonly options: { limit?: number; locale?: string } = {},
  ) {}

  async sync(): Promise<SyncOutcome> {
    // Everything a scan learns waits here until both streams finished.
    const scanned = new Map<string, ExportRow>()
    let recipientId: string | null | undefined
    let requests = 0
    for (const stream of STREAMS) {
      let cursor: string | undefined
      for (;;) {
        requests++
        const res = await this.get(syncPath({
          recipientEmail: this.recipientEmail, stream, limit: this.options.limit, locale: this.options.locale, cursor,
        }))
        if (res.status !== 200) return { ok: false, status: res.status, code: res.body?.code, requests }
        const page = res.body as ExportPage
        // Pages of one scan answering for different people cannot make one mirror.
        if (recipientId !== undefined && page.recipientId !== recipientId) return { ok: false, status: 200, code: 'RECIPIENT_CHANGED', requests }
        recipientId = page.recipientId
        for (const row of page.page) scanned.set(row.id, row)
        if (page.isDone) break
        cursor = page.continueCursor
      }
    }
    let upserted = 0
    for (const [id, row] of scanned) {
      if (this.rows.get(id)?.version === row.version) continue
      this.rows.set(id, row)
      upserted++
    }
    let retracted = 0
    for (const id of [...this.rows.keys()]) {
      if (scanned.has(id)) continue
      this.rows.delete(id)
      retracted++
    }
    return { ok: true, recipientId: recipientId ?? null, upserted, retracted, requests }
  }
}
