// Where the database is: DATABASE_URL, or the embedded cluster under .data/.
import type { Config } from '../config.ts'
import { startEmbedded } from './embedded.ts'

/**
 * callerHandlesSignals: the caller stops the embedded cluster itself on SIGTERM and
 * SIGINT (the composition root does, after answering what it accepted).
 */
export async function resolveDatabase(config: Config, log?: (line: string) => void,
  options: { callerHandlesSignals?: boolean } = {}): Promise<{ url: string; stop: () => Promise<void> }> {
  if (config.DATABASE_URL) return { url: config.DATABASE_URL, stop: async () => {} }
  return startEmbedded({ dataDir: '.data/postgres', port: config.EMBEDDED_PG_PORT, database: 'tale', log,
    callerHandlesSignals: options.callerHandlesSignals })
}
