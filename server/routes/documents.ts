// Hub documents (/api/v1/documents): the organization's documents outside every
// project, inline text or an uploaded file, each indexed for the knowledge search
// (docs/knowledge.md). Rules in db/functions/0131_knowledge.sql.
import * as v from 'valibot'
import type { Route } from './route.ts'
import { integerParam, jsonObject, uuidParam } from '../transport/validation.ts'
import type { ObjectStore } from '../core/storage/object-store.ts'
import { observeBlob, observeStore } from '../core/storage/observe.ts'
import { component } from '../openapi/components.ts'
import { limit } from '../core/limits.ts'
import { presignedHandoff } from './files.ts'

/** The largest inline content, in UTF-8 bytes; more answers 413 BODY_TOO_LARGE (from SQL, with data.limitBytes). */
export const INLINE_MAX_BYTES = limit('document.inlineMaxBytes')
/**
 * The transport's cap on a create's body: the largest content and 4 MiB of JSON beside
 * it (escapes, name, metadata), so content at the limit is refused by the content
 * rule (limitBytes = INLINE_MAX_BYTES), not the transport's.
 */
export const CREATE_BODY_LIMIT = INLINE_MAX_BYTES + 4 * 1024 * 1024

const timestamp = v.pipe(v.number(), v.integer(), v.description('Epoch milliseconds'))
const reference = v.pipe(v.string(), v.trim(), v.minLength(1, 'must not be blank'), v.maxLength(200))
const mediaType = v.pipe(v.string(), v.maxLength(255),
  v.regex(/^[A-Za-z0-9][\w!#$&^.+-]*\/[A-Za-z0-9][\w!#$&^.+-]*(\s*;\s*[\w!#$&^.+-]+=("[^"\\]*"|[\w!#$&^.+-]+))*$/, 'must be a media type such as text/plain'))
const byteCount = v.pipe(v.number(), v.integer('must be a whole number of bytes'), v.minValue(0), v.maxValue(Number.MAX_SAFE_INTEGER))
const fileName = v.pipe(v.string(), v.maxLength(1000, 'at most 1000 characters'))
// s3Ref of an organization upload as preparation hands it out: organization/documents/upload.
const documentRef = v.pipe(v.string(),
  v.regex(/^[0-9a-f-]{36}\/documents\/[0-9a-f-]{36}$/, 'must be the s3Ref returned by POST /api/v1/documents/uploads'))

export const hubDocument = component('Document', v.strictObject({
  id: v.string(),
  name: v.string(),
  mimeType: v.string(),
  size: v.pipe(v.nullable(v.pipe(v.number(), v.integer())), v.description('Bytes: the inline content\'s in UTF-8, or the uploaded file\'s')),
  metadata: v.pipe(v.record(v.string(), v.unknown()), v.description('As given at creation; metadata.language selects the text search configuration its passages are indexed with')),
  source: v.pipe(v.picklist(['inline', 'upload']), v.description('inline: text sent in the request; upload: a file from POST /api/v1/documents/uploads')),
  indexing: v.strictObject({
    status: v.pipe(v.picklist(['skipped', 'indexing', 'indexed', 'failed']), v.description('indexing until its passages are searchable')),
    error: v.pipe(v.nullable(v.string()), v.description('Why indexing failed')),
  }),
  createdAt: timestamp,
  updatedAt: timestamp,
}))

const createBody = v.pipe(
  v.strictObject({
    name: v.optional(v.pipe(v.string(), v.maxLength(1000, 'at most 1000 characters'),
      v.description('Required inline; from an upload, the upload\'s fileName unless given (its extension gives the type)'))),
    content: v.optional(v.pipe(v.string(), v.minLength(1, 'must not be empty'),
      v.description(`Inline text, at most ${INLINE_MAX_BYTES} bytes in UTF-8 (413 BODY_TOO_LARGE beyond)`))),
    mimeType: v.optional(v.pipe(mediaType, v.description('Inline only: the type of the text; text/plain when not sent'))),
    metadata: v.optional(v.pipe(jsonObject, v.description('Inline only: any JSON object, kept with the document'))),
    uploadId: v.optional(v.pipe(reference, v.description('An upload of POST /api/v1/documents/uploads, once its bytes were PUT'))),
    fileId: v.optional(v.pipe(documentRef, v.description('The upload\'s s3Ref'))),
  }),
  v.check((body) => (body.content === undefined) !== (body.uploadId === undefined),
    'send either content (an inline document) or uploadId and fileId (an uploaded one)'),
  v.forward(v.check((body) => body.content === undefined || body.name !== undefined, 'is required with content'), ['name']),
  v.forward(v.check((body) => body.uploadId === undefined || body.fileId !== undefined, 'is required with uploadId'), ['fileId']),
  v.forward(v.check((body) => body.uploadId !== undefined || body.fileId === undefined, 'goes with uploadId'), ['fileId']),
  v.forward(v.check((body) => body.content !== undefined || body.mimeType === undefined, 'only with content: an upload\'s type follows its extension'), ['mimeType']),
  v.forward(v.check((body) => body.content !== undefined || body.metadata === undefined, 'only with content'), ['metadata']),
)

const handoff = v.strictObject({
  uploadId: v.string(), url: v.string(), method: v.literal('PUT'), s3Ref: v.string(), expiresAt: v.number(), maxBytes: v.number(),
})
const idParams = v.strictObject({ id: uuidParam })

export function documentRoutes(store: ObjectStore | null): Route[] {
  return [
    {
      kind: 'operation', method: 'GET', path: '/api/v1/documents', tag: 'Documents', operation: 'documents_list', family: 'keyset',
      summary: 'List the organization\'s hub documents, newest first (project files are never listed here)', errors: [400],
      query: v.strictObject({ limit: v.optional(integerParam(1)), cursor: v.optional(v.string()) }),
      response: v.strictObject({ page: v.array(hubDocument), isDone: v.boolean(), continueCursor: v.string() }),
    },
    {
      kind: 'operation', method: 'POST', path: '/api/v1/documents/uploads', tag: 'Documents', operation: 'document_upload_prepare',
      summary: 'Prepare a hub document upload: a presigned PUT url valid 30 minutes (binding a declared type and size)',
      buckets: ['files'], errors: [400, 403, 503],
      body: v.strictObject({ fileName, contentType: v.optional(mediaType), size: v.optional(byteCount) }),
      response: handoff,
      observe: () => observeStore(store),
      respond: presignedHandoff(store),
    },
    {
      kind: 'operation', method: 'POST', path: '/api/v1/documents', tag: 'Documents', operation: 'document_create',
      summary: 'Create a hub document, inline or from an upload; it is queued for indexing at once', status: 201,
      errors: [400, 403, 404, 413, 503], bodyLimit: CREATE_BODY_LIMIT, body: createBody, response: hubDocument,
      // The store is asked only about an upload's bytes; inline text needs none.
      observe: async (input) => {
        const body = input.body as { uploadId?: string; fileId?: string }
        return body.uploadId === undefined ? {} : observeBlob(store, body.fileId!)
      },
      location: (body) => `/api/v1/documents/${body.id}`,
    },
    {
      kind: 'operation', method: 'GET', path: '/api/v1/documents/:id', tag: 'Documents', operation: 'document_get',
      summary: 'Read a hub document', errors: [404], params: idParams, response: hubDocument,
    },
    {
      kind: 'operation', method: 'GET', path: '/api/v1/documents/:id/content', tag: 'Documents', operation: 'document_content',
      summary: 'A hub document\'s text: inline content as given, an upload\'s extracted text (null until indexed)',
      errors: [404], params: idParams,
      response: v.strictObject({ id: v.string(), content: v.nullable(v.string()) }),
    },
    {
      kind: 'operation', method: 'POST', path: '/api/v1/documents/:id/retry-indexing', tag: 'Documents',
      operation: 'document_retry_indexing', summary: 'Index the document again; 10 per user per minute, shared with project files',
      errors: [403, 404, 429], params: idParams, response: v.strictObject({ status: v.literal('indexing') }),
    },
    {
      kind: 'operation', method: 'DELETE', path: '/api/v1/documents/:id', tag: 'Documents', operation: 'document_delete',
      summary: 'Delete a hub document, its passages and its uploaded object', status: 204, errors: [403, 404], params: idParams,
    },
  ]
}
