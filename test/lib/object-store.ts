// A real S3-protocol store (s3rver) on loopback, in a directory of its own.
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import type { Test } from 'tap'
import { createObjectStore, type ObjectStore } from '../../server/core/storage/object-store.ts'
import { startLocalS3, type LocalS3 } from '../../server/core/storage/local-s3.ts'

export async function localStore(t: Test): Promise<{ local: LocalS3; store: ObjectStore; directory: string }> {
  const directory = await mkdtemp(path.join(tmpdir(), 'tale-s3-'))
  const local = await startLocalS3({ directory })
  t.teardown(async () => {
    await local.close().catch(() => {})
    await rm(directory, { recursive: true, force: true })
  })
  return { local, store: createObjectStore(local.settings), directory }
}
