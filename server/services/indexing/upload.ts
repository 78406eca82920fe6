// Upload bodies: multipart/form-data parsed as it streams in (@fastify/busboy), the
// file held to indexing.uploadMaxBytes as its bytes arrive, and every problem of the
// fields gathered with its path rather than the first one alone.
import type { IncomingMessage } from 'node:http'
import { Busboy } from '@fastify/busboy'
import { invalidBody, tooLarge, badText, type Issue } from '../../core/internal-service/http.ts'
import { FILE_ID_PATTERN, MAX_FILE_NAME_UNITS } from './schemas.ts'

/** What the form fields besides the file may weigh together (file_id, sync, metadata and the framing). */
export const FIELDS_ALLOWANCE_BYTES = 1024 * 1024

export interface UploadForm {
  fileId: string
  fileName: string
  bytes: Buffer
  sync: boolean
  metadata: Record<string, unknown>
  /** metadata.language as sent, or null for the default. */
  language: string | null
}

/** The form when every field is right; else the issues, with metadata.language when it could be read (to check it as well). */
export type ParsedUpload = { ok: true; form: UploadForm } | { ok: false; issues: Issue[]; language: string | null }

const KNOWN_FIELDS = new Set(['file', 'file_id', 'sync', 'metadata'])

/**
 * Reads the form. Throws BODY_TOO_LARGE as soon as the file passes maxBytes (or the
 * whole body passes maxBytes plus the fields' allowance, or Content-Length already
 * says it will), INVALID_BODY for a body that is not a well-formed multipart form;
 * answers the fields' problems as issues.
 */
export function readUpload(req: IncomingMessage, maxBytes: number): Promise<ParsedUpload> {
  const bodyLimit = maxBytes + FIELDS_ALLOWANCE_BYTES
  const declared = Number(req.headers['content-length'])
  if (Number.isFinite(declared) && declared > bodyLimit) return Promise.reject(tooLarge(maxBytes))
  const contentType = req.headers['content-type'] ?? ''
  if (!/^multipart\/form-data\s*;/i.test(contentType)) {
    return Promise.reject(invalidBody('Send the file as multipart/form-data.', [{ path: '', message: 'expected a multipart/form-data body' }]))
  }
  let parser: InstanceType<typeof Busboy>
  try {
    parser = new Busboy({
      headers: { ...req.headers, 'content-type': contentType },
      // The part named file is the file, with or without a filename or type.
      isPartAFile: (field) => field === 'file',
      limits: { fileSize: maxBytes, fieldSize: FIELDS_ALLOWANCE_BYTES, fieldNameSize: 200, parts: 20 },
    })
  } catch (error) {
    return Promise.reject(invalidBody('The multipart body cannot be read.', [{ path: '', message: (error as Error).message }]))
  }

  return new Promise<ParsedUpload>((resolve, reject) => {
    const fields = new Map<string, string>()
    const issues: Issue[] = []
    const seen = new Set<string>()
    let file: { name: string | undefined; chunks: Buffer[]; size: number } | null = null
    let fileDone: Promise<void> = Promise.resolve()
    let settled = false
    let received = 0

    const stop = (error: Error) => {
      if (settled) return
      settled = true
      req.off('data', count)
      req.unpipe(parser)
      // Stop reading: the refusal goes out and the connection closes after it.
      req.pause()
      parser.removeAllListeners()
      parser.on('error', () => {})
      parser.destroy()
      reject(error)
    }
    const count = (chunk: Buffer) => {
      received += chunk.length
      if (received > bodyLimit) stop(tooLarge(maxBytes))
    }
    const repeated = (name: string) => {
      if (seen.has(name)) {
        issues.push({ path: name, message: 'given more than once' })
        return true
      }
      seen.add(name)
      return false
    }

    parser.on('file', (field, stream, filename) => {
      if (repeated(field)) {
        stream.resume()
        return
      }
      const current = { name: filename, chunks: [] as Buffer[], size: 0 }
      file = current
      fileDone = new Promise<void>((done) => {
        stream.on('data', (chunk: Buffer) => {
          current.chunks.push(chunk)
          current.size += chunk.length
        })
        stream.on('limit', () => stop(tooLarge(maxBytes)))
        stream.on('end', () => done())
        stream.on('error', (error: Error) => stop(error))
      })
    })
    parser.on('field', (field, value, nameTruncated, valueTruncated) => {
      if (nameTruncated) {
        issues.push({ path: field, message: 'field name too long' })
        return
      }
      if (!KNOWN_FIELDS.has(field)) {
        issues.push({ path: field, message: `unknown field "${field}"` })
        return
      }
      if (repeated(field)) return
      if (field === 'file') {
        issues.push({ path: 'file', message: 'must be a file part' })
        return
      }
      if (valueTruncated) {
        issues.push({ path: field, message: `longer than ${FIELDS_ALLOWANCE_BYTES} bytes` })
        return
      }
      fields.set(field, value)
    })
    parser.on('partsLimit', () => issues.push({ path: '', message: 'too many parts' }))
    parser.on('error', (error: Error) => stop(invalidBody('The multipart body cannot be read.', [{ path: '', message: error.message }])))
    parser.on('finish', () => {
      void fileDone.then(() => {
        if (settled) return
        settled = true
        req.off('data', count)
        resolve(check(fields, file, issues))
      })
    })
    req.on('data', count)
    req.on('error', (error) => stop(error))
    req.pipe(parser)
  })
}

function check(fields: Map<string, string>, file: { name: string | undefined; chunks: Buffer[]; size: number } | null, issues: Issue[]): ParsedUpload {
  if (!file) {
    if (!issues.some((issue) => issue.path === 'file')) issues.push({ path: 'file', message: 'required: the file\'s bytes, with a filename' })
  } else if (!file.name || file.name.trim() === '') {
    issues.push({ path: 'file', message: 'must carry a filename' })
  } else if (file.name.length > MAX_FILE_NAME_UNITS) {
    issues.push({ path: 'file', message: `the filename must be at most ${MAX_FILE_NAME_UNITS} characters` })
  } else {
    const bad = badText(file.name)
    if (bad) issues.push({ path: 'file', message: `the filename holds a ${bad.message}` })
  }

  const fileId = fields.get('file_id')
  if (fileId === undefined) {
    if (!issues.some((issue) => issue.path === 'file_id')) issues.push({ path: 'file_id', message: 'required' })
  } else if (!FILE_ID_PATTERN.test(fileId)) {
    issues.push({ path: 'file_id', message: 'must be 1 to 255 letters, digits, ".", "_", ":" or "-", starting with a letter or digit' })
  }

  const syncText = fields.get('sync')
  if (syncText !== undefined && syncText !== 'true' && syncText !== 'false') {
    issues.push({ path: 'sync', message: 'must be true or false' })
  }

  let metadata: Record<string, unknown> = {}
  let language: string | null = null
  const metadataText = fields.get('metadata')
  if (metadataText !== undefined) {
    let parsed: unknown
    try {
      parsed = JSON.parse(metadataText)
    } catch (error) {
      issues.push({ path: 'metadata', message: `not valid JSON: ${(error as Error).message}` })
    }
    if (parsed !== undefined) {
      if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
        issues.push({ path: 'metadata', message: 'must be a JSON object' })
      } else {
        const bad = badText(parsed)
        if (bad) issues.push({ path: bad.path ? `metadata.${bad.path}` : 'metadata', message: bad.message })
        metadata = parsed as Record<string, unknown>
        const named = metadata.language
        if (named !== undefined && named !== null) {
          if (typeof named !== 'string' || !/^[A-Za-z0-9_]{1,63}$/.test(named.trim())) {
            issues.push({ path: 'metadata.language', message: 'must name a text search configuration (english, german, simple, ...)' })
          } else {
            language = named.trim()
          }
        }
      }
    }
  }

  if (issues.length > 0) return { ok: false, issues, language }
  return {
    ok: true,
    form: {
      fileId: fileId!, fileName: file!.name!, bytes: Buffer.concat(file!.chunks, file!.size),
      sync: syncText === 'true', metadata, language,
    },
  }
}
