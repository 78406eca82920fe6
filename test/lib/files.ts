// The upload handoff as an outside client performs it.
import type { Response } from './service.ts'
import type { Client } from './world.ts'

/** PUTs bytes to a presigned url exactly as an outside client would: no Authorization. */
export async function putBytes(url: string, bytes: string | Buffer, contentType?: string): Promise<number> {
  const response = await fetch(url, { method: 'PUT', body: bytes, headers: contentType ? { 'content-type': contentType } : {} })
  await response.arrayBuffer()
  return response.status
}

/** Prepare, PUT and bind: the whole handoff. */
export async function uploadFile(caller: Client, project: string, fileName: string, bytes: string | Buffer,
  bind: Record<string, unknown> = {}): Promise<Response> {
  const prepared = await caller.post(`/api/v1/projects/${project}/uploads`, { fileName })
  if (prepared.status !== 200) return prepared
  const stored = await putBytes(prepared.body.url, bytes)
  if (stored !== 200) throw new Error(`the store refused the PUT: ${stored}`)
  return caller.post(`/api/v1/projects/${project}/files`, {
    uploadId: prepared.body.uploadId, fileId: prepared.body.s3Ref, fileName, ...bind,
  })
}
