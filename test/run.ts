// `npm test`: the whole suite. Uses DATABASE_URL when set; otherwise starts an
// embedded PostgreSQL under .data/ for the run.
import { spawn } from 'node:child_process'
import { startEmbedded } from '../server/core/db/embedded.ts'

let stop = async () => {}
const env = { ...process.env }
if (!env.DATABASE_URL) {
  const embedded = await startEmbedded({ dataDir: '.data/test-postgres', port: Number(env.TEST_PG_PORT ?? 54330), database: 'postgres' })
  env.DATABASE_URL = embedded.url
  stop = embedded.stop
}

const tap = spawn(process.execPath, ['node_modules/tap/dist/esm/run.mjs', ...process.argv.slice(2)], { stdio: 'inherit', env })
const code = await new Promise<number>((resolve) => tap.on('exit', (status) => resolve(status ?? 1)))
await stop()
process.exit(code)
