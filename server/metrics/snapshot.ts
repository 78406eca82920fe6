// How the metrics read the database at scrape time: on the owner's connection (the
// job queue and the statistics views are no request's business), in a read-only
// transaction that gives up after SCRAPE_TIMEOUT_MS rather than let a slow or locked
// database hold a scrape, or a scrape hold anything else.
import type { Sql } from '../core/db/connection.ts'

/** How long one scrape's statements may run, or wait for a lock, before it gives up. */
export const SCRAPE_TIMEOUT_MS = 2_000
/** A database that does not even answer (no connection) is given up on after this long. */
const UNANSWERED_MS = 5_000

export async function readSnapshot<T>(owner: Sql, read: (sql: Sql) => Promise<T>): Promise<T> {
  const reading = owner.begin('read only', async (sql) => {
    await sql`select set_config('statement_timeout', ${String(SCRAPE_TIMEOUT_MS)}, true),
                     set_config('lock_timeout', ${String(SCRAPE_TIMEOUT_MS)}, true)`
    return await read(sql as unknown as Sql)
  }) as Promise<T>
  let timer: NodeJS.Timeout | undefined
  try {
    return await Promise.race([
      reading,
      new Promise<never>((_resolve, reject) => {
        timer = setTimeout(() => reject(new Error('the database did not answer the scrape')), UNANSWERED_MS)
      }),
    ])
  } finally {
    clearTimeout(timer)
    // A reading given up on still settles later; its failure is already accounted for.
    reading.catch(() => {})
  }
}
