import * as v from 'valibot'
import contentDisposition from 'content-disposition'
import type { IncomingMessage, ServerResponse } from 'node:http'
import { pipeline } from 'node:stream/promises'
import type { Route } from './route.ts'
import { integerParam, uuidParam } from '../transport/validation.ts'
import { HttpError } from '../transport/errors.ts'
import { etagMatches, writeReply } from '../transport/respond.ts'
import { ObjectChanged, ObjectStoreUnavailable, type ObjectStore } from '../core/storage/object-store.ts'
import { observeBlob, observeStore } from '../core/storage/observe.ts'
import { limit } from '../core/limits.ts'

/** The presigned PUT lives as long as the upload (db/limits.json). */
export const UPLOAD_LIFETIME_SECONDS = limit('upload.lifetimeSeconds')

const file = v.strictObject({
  id: v.string(), fileName: v.string(), folderId: v.nullable(v.string()), mimeType: v.string(),
  size: v.nullable(v.pipe(v.number(), v.integer())), indexing: v.strictObject({ status: v.picklist(['skipped', 'indexing', 'indexed', 'failed']) }), createdAt: v.number(), projectId: v.string(),
})
// Any non-blank string: one naming no record of the project answers its 404.
const reference = v.pipe(v.string(), v.trim(), v.minLength(1, 'must not be blank'), v.maxLength(200))
const projectParams = v.strictObject({ id: uuidParam })
const fileParams = v.strictObject({ id: uuidParam, documentId: reference })
const fileName = v.pipe(v.string(), v.maxLength(1000, 'at most 1000 characters'))
// s3Ref as preparation hands it out: organization/project/upload.
const s3Ref = v.pipe(v.string(), v.regex(/^[0-9a-f-]{36}\/[0-9a-f-]{36}\/[0-9a-f-]{36}$/, 'must be the s3Ref returned by upload preparation'))
const contentType = v.pipe(v.string(), v.maxLength(255),
  v.regex(/^[A-Za-z0-9][\w!#$&^.+-]*\/[A-Za-z0-9][\w!#$&^.+-]*(\s*;\s*[\w!#$&^.+-]+=("[^"\\]*"|[\w!#$&^.+-]+))*$/, 'must be a media type such as text/plain'))
const byteCount = v.pipe(v.number(), v.integer('must be a whole number of bytes'), v.minValue(0), v.maxValue(Number.MAX_SAFE_INTEGER))

const handoff = v.strictObject({
  uploadId: v.string(), url: v.string(), method: v.literal('PUT'), s3Ref: v.string(), expiresAt: v.number(), maxBytes: v.number(),
})

/**
 * Answers a prepared upload (project files, hub documents) with its presigned PUT.
 * Signing is local: the store was reached just before, in the route's observe.
 */
export const presignedHandoff = (store: ObjectStore | null) =>
  async (prepared: Record<string, any>, req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const url = await store!.presignPut(prepared.s3Ref, {
      contentType: prepared.contentType ?? undefined, contentLength: prepared.size ?? undefined,
      expiresInSeconds: UPLOAD_LIFETIME_SECONDS,
    })
    writeReply(req, res, 200, { json: {
      uploadId: prepared.uploadId, url, method: 'PUT', s3Ref: prepared.s3Ref,
      expiresAt: prepared.expiresAt, maxBytes: prepared.maxBytes,
    } })
  }

export function fileRoutes(store: ObjectStore | null): Route[] {
  return [
    {
      kind: 'operation', method: 'POST', path: '/api/v1/projects/:id/uploads', tag: 'Files', operation: 'upload_prepare',
      summary: 'Prepare an upload: a presigned PUT url valid 30 minutes (binding a declared type and size)', buckets: ['files'],
      errors: [400, 403, 404, 503],
      params: projectParams,
      body: v.strictObject({ fileName: v.optional(fileName), contentType: v.optional(contentType), size: v.optional(byteCount) }),
      response: handoff,
      observe: () => observeStore(store),
      respond: presignedHandoff(store),
    },
    {
      kind: 'operation', method: 'POST', path: '/api/v1/projects/:id/files', tag: 'Files', operation: 'file_bind',
      summary: 'Bind uploaded bytes as a project file', buckets: ['files'], status: 201,
      errors: [400, 403, 404, 503],
      params: projectParams,
      body: v.strictObject({
        uploadId: reference, fileId: s3Ref, folderId: v.optional(v.nullable(reference)), fileName,
        skipRagIndexing: v.optional(v.boolean()),
      }),
      response: v.strictObject({ file }),
      observe: (input) => observeBlob(store, (input.body as { fileId: string }).fileId),
      location: (body, input) => `/api/v1/projects/${String(input.params.id)}/files/${body.file.id}`,
    },
    {
      kind: 'operation', method: 'GET', path: '/api/v1/projects/:id/files', tag: 'Files', operation: 'files_list',
      family: 'keyset', summary: 'List project files newest first: all, unfiled (folderId=root) or one folder',
      errors: [400, 404],
      params: projectParams,
      query: v.strictObject({ folderId: v.optional(reference), limit: v.optional(integerParam(1)), cursor: v.optional(v.string()) }),
      response: v.strictObject({ files: v.array(file), isDone: v.boolean(), continueCursor: v.string(), cursor: v.optional(v.string()) }),
    },
    {
      kind: 'operation', method: 'GET', path: '/api/v1/projects/:id/files/:documentId', tag: 'Files', operation: 'file_get',
      summary: 'Read a project file', errors: [404], params: fileParams, response: v.strictObject({ file }),
    },
    {
      kind: 'operation', method: 'GET', path: '/api/v1/projects/:id/files/:documentId/content', tag: 'Files',
      operation: 'file_content', summary: 'Download a project file\'s bytes (the name is in Content-Disposition)',
      errors: [404, 503], params: fileParams, produces: 'application/octet-stream',
      respond: (found, req, res) => sendContent(store, found as StoredFile, req, res),
    },
    {
      kind: 'operation', method: 'POST', path: '/api/v1/projects/:id/files/:documentId/retry-indexing', tag: 'Files',
      operation: 'file_retry_indexing', summary: 'Index the file (again), lifting an opt-out; 10 per user per minute',
      errors: [403, 404, 429], params: fileParams, response: v.strictObject({ status: v.literal('indexing') }),
    },
    {
      kind: 'operation', method: 'DELETE', path: '/api/v1/projects/:id/files/:documentId', tag: 'Files',
      operation: 'file_delete', summary: 'Delete a project file permanently', status: 204, errors: [403, 404],
      params: fileParams,
    },
  ]
}

interface StoredFile {
  file: { id: string; fileName: string; mimeType: string; size: number | null; createdAt: number }
  object: { key: string; etag: string | null }
}

// Clients that cannot read filename* get the name with accents stripped and any
// other non-ASCII character replaced; the exact name travels in filename*.
const asciiFallback = (name: string) => name.normalize('NFKD').replace(/[\u0300-\u036f]/g, '').replace(/[^\x20-\x7e]/g, '?')

const fileNotFound = () => new HttpError(404, 'FILE_NOT_FOUND', 'File not found in this project.')

// The bytes never change after binding, so the stored ETag and the binding time
// validate them; If-None-Match decides when both conditions are sent.
async function sendContent(store: ObjectStore | null, found: StoredFile, req: IncomingMessage, res: ServerResponse): Promise<void> {
  if (!store) throw new HttpError(503, 'OBJECT_STORE_UNCONFIGURED', 'This deployment has no object storage configured.')
  const { file, object } = found
  const etag = `"${(object.etag ?? file.id).replace(/^W\//, '').replace(/"/g, '')}"`
  const lastModified = new Date(Math.floor(file.createdAt / 1000) * 1000)
  const headers: Record<string, string> = {
    etag,
    'last-modified': lastModified.toUTCString(),
    'cache-control': 'private, no-cache',
  }
  const ifNoneMatch = req.headers['if-none-match']
  const ifModifiedSince = req.headers['if-modified-since']
  const unchanged = ifNoneMatch !== undefined
    ? etagMatches(ifNoneMatch, etag)
    : ifModifiedSince !== undefined && !Number.isNaN(Date.parse(ifModifiedSince)) && lastModified.getTime() <= Date.parse(ifModifiedSince)
  if (unchanged) {
    writeReply(req, res, 304, {}, headers)
    return
  }

  let stored
  try {
    stored = await store.get(object.key, { ifMatch: object.etag ?? undefined })
  } catch (error) {
    // Bytes written over the upload url after binding are not this file's.
    if (error instanceof ObjectChanged) throw fileNotFound()
    if (error instanceof ObjectStoreUnavailable) {
      throw new HttpError(503, 'OBJECT_STORE_UNAVAILABLE', 'The object store cannot be reached; retry later.')
    }
    throw error
  }
  if (!stored) throw fileNotFound()
  res.writeHead(200, {
    ...headers,
    'content-type': file.mimeType,
    'content-length': String(stored.object.size),
    'content-disposition': contentDisposition(file.fileName, { fallback: asciiFallback(file.fileName) }),
    // User content: never let a browser guess a more dangerous type.
    'x-content-type-options': 'nosniff',
  })
  if (req.method === 'HEAD') {
    stored.body.destroy()
    res.end()
    return
  }
  await pipeline(stored.body, res)
}
