// Which object store a process uses: the configured S3 endpoint; none when
// S3_ENDPOINT is `none`; otherwise a local S3-protocol store under .data/, so that
// a newcomer's `npm start` accepts uploads with no configuration.
import { mkdir } from 'node:fs/promises'
import path from 'node:path'
import { objectStoreSettings, type Config } from '../config.ts'
import { createObjectStore, type ObjectStore } from './object-store.ts'
import { startLocalS3 } from './local-s3.ts'

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
  const local = await startLocalS3({ directory })
  return {
    store: createObjectStore(local.settings),
    description: `local ${local.settings.endpoint}/${local.settings.bucket} (files under ${directory})`,
    stop: local.close,
  }
}
