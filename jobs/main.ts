// `npm run worker`: a worker process of its own, for deployments that scale workers
// apart from the API.
import { loadConfig } from '../server/core/config.ts'
import { resolveDatabase } from '../server/core/db/database.ts'
import { ownerPool } from '../server/core/db/connection.ts'
import { migrate } from '../server/core/db/migrate.ts'
import { startWorker } from './worker.ts'
import { resolveObjectStore } from '../server/core/storage/resolve.ts'

const config = loadConfig()
const database = await resolveDatabase(config)
const owner = ownerPool(database.url, 1)
await migrate(owner, database.url)
await owner.end()
const objectStore = await resolveObjectStore(config)
const runner = await startWorker(database.url, { objectStore: objectStore.store, concurrency: config.WORKER_CONCURRENCY })
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => { void runner.stop().then(objectStore.stop).then(() => database.stop()) })
}
await runner.promise
