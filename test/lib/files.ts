// A service with a real S3-protocol store and the job worker, an organization with
// two projects, and the upload handoff as an outside client performs it.
import type { Test } from 'tap'
import { startTestService, type Response, type TestService } from './service.ts'
import { acme } from './fixtures.ts'
import { localStore } from './object-store.ts'
import type { SeedFile } from '../../server/admin/operations.ts'

export interface Caller {
  post: (path: string, body?: unknown, headers?: Record<string, string>) => Promise<Response>
  get: (path: string, headers?: Record<string, string>) => Promise<Response>
  del: (path: string) => Promise<Response>
}

export async function filesWorld(t: Test, options: { store?: boolean; worker?: boolean; env?: Record<string, string>;
  organizations?: SeedFile['organizations'] } = {}) {
  const local = options.store === false ? null : await localStore(t)
  const service = await startTestService(t, options.env ?? {}, undefined,
    { objectStore: local?.store ?? null, worker: options.worker ?? true })
  const seeded = await service.seed({
    ...acme(),
    ...(options.organizations ? { organizations: options.organizations } : {}),
    projects: [
      { org: 'acme', name: 'Alpha', createdBy: 'olive@acme.test',
        access: [{ email: 'max@acme.test', level: 'read' }, { email: 'eddie@acme.test', level: 'edit' }] },
      { org: 'acme', name: 'Beta', createdBy: 'olive@acme.test', access: [] },
    ],
  })
  const as = (email: string): Caller => {
    const key = seeded.users[email]!.keys.main!
    return {
      post: (path, body, headers) => service.request('POST', path, { key, body, headers }),
      get: (path, headers) => service.request('GET', path, { key, headers }),
      del: (path) => service.request('DELETE', path, { key }),
    }
  }
  const alpha = seeded.projects.Alpha!.id
  const beta = seeded.projects.Beta!.id
  return {
    service, local, seeded, alpha, beta,
    olive: as('olive@acme.test'), eddie: as('eddie@acme.test'), max: as('max@acme.test'), gina: as('gina@globex.test'),
  }
}

/** PUTs bytes to a presigned url exactly as an outside client would: no Authorization. */
export async function putBytes(url: string, bytes: string | Buffer, contentType?: string): Promise<number> {
  const response = await fetch(url, { method: 'PUT', body: bytes, headers: contentType ? { 'content-type': contentType } : {} })
  await response.arrayBuffer()
  return response.status
}

/** Prepare, PUT and bind: the whole handoff. */
export async function uploadFile(caller: Caller, project: string, fileName: string, bytes: string | Buffer,
  bind: Record<string, unknown> = {}): Promise<Response> {
  const prepared = await caller.post(`/api/v1/projects/${project}/uploads`, { fileName })
  if (prepared.status !== 200) return prepared
  const stored = await putBytes(prepared.body.url, bytes)
  if (stored !== 200) throw new Error(`the store refused the PUT: ${stored}`)
  return caller.post(`/api/v1/projects/${project}/files`, {
    uploadId: prepared.body.uploadId, fileId: prepared.body.s3Ref, fileName, ...bind,
  })
}

export type { TestService }
