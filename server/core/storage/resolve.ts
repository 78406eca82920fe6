// Which object store a process uses: the configured S3 endpoint; none when
// S3_ENDPOINT is `none`; otherwise a local S3-protocol store under .data/, so that
// a newcomer's `npm start` accepts uploads with no configuration.
import { mkdir, readFile, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { objectStoreSettings, type Config } from '../config.ts'
import { createObjectStore, type ObjectStore } from './object-store.ts'
import { localS3Settings, startLocalS3, type LocalS3 } from './local-s3.ts'

export interface ResolvedStore {
  store: ObjectStore | null
  /** Where it is, for the start-up log. */
  description: string
  stop: () => Promise<void>
}

export async function resolveObjectStore(config: Config, dataDir = '.data/s3'): Promise<ResolvedStore> {
  if (config.S3_ENDPOINT === 'none') return { store: null, description: 'none (uploads are refused)', stop: async () => {} }
  const settings = objectStoreSettings(config)
  if (settings) return { store: createObjectStore(settings), description: `${settings.endpoint}/${settings.bucket}`, stop: async () => {} }
  const directory = path.resolve(dataDir)
  await mkdir(directory, { recursive: true })
  const local = await startLocalStore(directory)
  return {
    store: createObjectStore(local.settings),
    description: `local ${local.settings.endpoint}/${local.settings.bucket} (files under ${directory})`,
    stop: local.close,
  }
}

/**
 * The local store keeps the port it first got (written beside its directory):
 * presigned upload URLs name the port, so one prepared before a restart still
 * works after it. When that port is taken by the local store of another process
 * of this service on the same directory (the API and a worker started apart), that
 * store is used; when something else holds it, the store moves to a new port.
 */
async function startLocalStore(directory: string): Promise<LocalS3> {
  const portFile = `${directory}.port`
  const saved = Number((await readFile(portFile, 'utf8').catch(() => '')).trim()) || null
  if (saved !== null) {
    try {
      return await startLocalS3({ directory, port: saved })
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw error
      const settings = localS3Settings(saved)
      const reachable = await createObjectStore(settings).ping().then(() => true, () => false)
      if (reachable) return { settings, close: async () => {} }
    }
  }
  const local = await startLocalS3({ directory })
  await writeFile(portFile, `${new URL(local.settings.endpoint).port}\n`)
  return local
}
