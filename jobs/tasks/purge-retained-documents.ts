import type { Task } from 'graphile-worker'

const BATCH = 500

// Files of deleted projects leave retention for good (their objects by trigger).
export const purgeRetainedDocuments: Task = async (_payload, helpers) => {
  let purged = 0
  for (;;) {
    const { rows: [result] } = await helpers.query<{ n: number }>('select app.worker_purge_retained_documents($1) as n', [BATCH])
    purged += result?.n ?? 0
    if ((result?.n ?? 0) < BATCH) break
  }
  helpers.logger.debug(`purged ${purged} documents past retention`)
}
