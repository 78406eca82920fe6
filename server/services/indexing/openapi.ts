// The indexing service's own OpenAPI 3.1 document, built from the valibot schemas
// that check its requests (schemas.ts); /docs renders it (server/core/internal-service).
import { commonDocument, jsonSchemaOf as schema } from '../../core/internal-service/docs.ts'
import { limit } from '../../core/limits.ts'
import * as s from './schemas.ts'

type Json = Record<string, unknown>

const json = (body: Json) => ({ 'application/json': { schema: body } })
const error = (description: string) => ({ description, content: json({ $ref: '#/components/schemas/Error' }) })

const errors = {
  400: error('INVALID_BODY: the body is malformed; data.issues lists every problem with its path'),
  401: error('UNAUTHORIZED: INDEXING_TOKEN is set and the request does not carry it as a bearer token'),
  404: error('FILE_NOT_FOUND: no file with this file_id'),
  405: error('METHOD_NOT_ALLOWED: the path exists, the verb does not'),
  409: error('FILE_ID_RESERVED: the file_id names a document of the platform'),
  413: error('BODY_TOO_LARGE: the upload exceeds indexing.uploadMaxBytes (data.limitBytes)'),
  500: error('INTERNAL_ERROR'),
}
const pick = (...codes: (keyof typeof errors)[]) => Object.fromEntries(codes.map((code) => [String(code), errors[code]]))
const bearer = [{ bearer: [] }]

const fileIdParameter = {
  name: 'file_id', in: 'path', required: true,
  schema: { type: 'string', pattern: s.FILE_ID_PATTERN.source }, description: 'The caller\'s name for the file.',
}

export function indexingDocument(version: string): Json {
  const common = commonDocument('rag', 'INDEXING_TOKEN')
  const uploadMaxBytes = limit('indexing.uploadMaxBytes')
  return {
    openapi: '3.1.0',
    info: {
      title: 'Indexing service', version,
      description: 'Indexes uploaded files (extraction, chunks, optional embeddings) into PostgreSQL and searches them by '
        + 'reciprocal rank fusion of full text, trigram similarity and vectors. Every refusal is {error, code, data}.',
      'x-tale-limits': { 'indexing.uploadMaxBytes': uploadMaxBytes },
    },
    servers: [{ url: '/' }],
    security: bearer,
    paths: {
      '/api/v1/documents/upload': {
        post: {
          operationId: 'uploadDocument', summary: 'Upload a file to index (background by default; sync=true waits)',
          'x-tale-body-limit': uploadMaxBytes,
          requestBody: {
            required: true,
            content: {
              'multipart/form-data': {
                schema: {
                  type: 'object', required: ['file', 'file_id'], additionalProperties: false,
                  properties: {
                    file: { type: 'string', contentMediaType: 'application/octet-stream', description: `The file's bytes with a filename (its extension picks the reader); at most ${uploadMaxBytes} bytes.` },
                    file_id: { type: 'string', pattern: s.FILE_ID_PATTERN.source, description: 'The caller\'s name for the file; a new upload under the same file_id replaces the file.' },
                    sync: { type: 'string', enum: ['true', 'false'], default: 'false', description: 'true: index before answering and answer the settled status.' },
                    metadata: { type: 'string', contentMediaType: 'application/json', description: 'A JSON object kept with the file and returned with search results; metadata.language names the text search configuration (english by default).' },
                  },
                },
              },
            },
          },
          responses: {
            200: { description: 'sync=true: the file indexed, completed or failed', content: json(schema(s.settledAnswer, 'output')) },
            202: { description: 'Queued; POST /api/v1/documents/statuses follows it', content: json(schema(s.acceptedAnswer, 'output')) },
            ...pick(400, 401, 409, 413, 500),
          },
        },
      },
      '/api/v1/documents/statuses': {
        post: {
          operationId: 'documentStatuses', summary: 'The indexing status of files, in the order asked',
          requestBody: { required: true, content: json(schema(s.statusesBody, 'input')) },
          responses: { 200: { description: 'One status per file_id asked; not_found for an unknown one', content: json(schema(s.statusesAnswer, 'output')) }, ...pick(400, 401, 413, 500) },
        },
      },
      '/api/v1/search': {
        post: {
          operationId: 'search', summary: 'Ranked passages of the named files',
          requestBody: { required: true, content: json(schema(s.searchBody, 'input')) },
          responses: { 200: { description: 'Passages, best first', content: json(schema(s.searchAnswer, 'output')) }, ...pick(400, 401, 413, 500) },
        },
      },
      '/api/v1/documents/{file_id}/content': {
        get: {
          operationId: 'documentContent', summary: 'The full extracted text of a file (null until completed)',
          parameters: [fileIdParameter],
          responses: { 200: { description: 'The file\'s status and text', content: json(schema(s.contentAnswer, 'output')) }, ...pick(401, 404, 500) },
        },
      },
      '/api/v1/documents/compare': {
        post: {
          operationId: 'compareDocuments', summary: 'Line changes between two completed files and their similarity',
          requestBody: { required: true, content: json(schema(s.compareBody, 'input')) },
          responses: {
            200: { description: 'What b removed from a and added to it', content: json(schema(s.compareAnswer, 'output')) },
            ...pick(400, 401, 413, 500),
            404: error('FILE_NOT_FOUND: a file is unknown or not completed (data.file_ids names them)'),
          },
        },
      },
      '/api/v1/documents/{file_id}': {
        delete: {
          operationId: 'deleteDocument', summary: 'Remove a file, its text and its passages',
          parameters: [fileIdParameter],
          responses: { 204: { description: 'Removed' }, ...pick(401, 404, 409, 500) },
        },
      },
      ...common.paths,
    },
    components: common.components,
  }
}
