// The indexing service: its own HTTP application (Polka) on INDEXING_PORT, over the
// owner connection (the index store's functions are the owner's alone), with its own
// job runner for index_file. See docs/indexing.md.
//
//   POST   /api/v1/documents/upload            multipart: file, file_id, sync?, metadata?
//   POST   /api/v1/documents/statuses          {file_ids}
//   POST   /api/v1/search                      {query, file_ids, top_k?, similarity_threshold?, include_metadata?, language?}
//   GET    /api/v1/documents/:file_id/content
//   POST   /api/v1/documents/compare           {file_id_a, file_id_b}
//   DELETE /api/v1/documents/:file_id
//   GET    /health, /metrics/rag, /openapi.json, /docs
import type { Config } from '../../core/config.ts'
import { ownerPool, type Sql } from '../../core/db/connection.ts'
import type { Logger } from '../../core/log.ts'
import { limit } from '../../core/limits.ts'
import type { ObjectStore } from '../../core/storage/object-store.ts'
import { indexFile, queryEmbedding, type PipelineOutcome, type Query } from '../../core/indexing/pipeline.ts'
import { serviceEmbedder, type EmbeddingModel } from '../../core/indexing/embeddings.ts'
import { ServiceError, invalidBody, jsonBody, writeJson, writeJsonText, type Issue } from '../../core/internal-service/http.ts'
import {
  commonRoutes, startServiceServer, type Handler, type RunningServiceServer, type ServiceRequest, type ServiceRoute,
} from '../../core/internal-service/app.ts'
import type { JobRunner } from '../../core/internal-service/runner.ts'
import { readUpload } from './upload.ts'
import { compareTexts } from './compare.ts'
import { searchPassages } from './search.ts'
import { createMetrics, type IndexingMetrics } from './metrics.ts'
import { startRunner } from './runner.ts'
import { indexingDocument } from './openapi.ts'
import { FILE_ID_PATTERN, compareBody, fileIdList, searchBody, statusesBody } from './schemas.ts'

export const INDEXING_API_VERSION = '1.0.0'

export interface IndexingServiceOptions {
  log: Logger
  /** The object store platform documents' bytes are read from; null without one. */
  store: ObjectStore | null
  /** Overrides INDEXING_PORT (tests pass 0). */
  port?: number
  /** Runs the service's own index_file runner (default true). */
  runner?: boolean
}

export type RunningIndexingService = RunningServiceServer

const fileNotFound = (fileId: string) =>
  new ServiceError(404, 'FILE_NOT_FOUND', 'No file with this file_id.', { file_id: fileId })

/** The service's connections (the bench's floor opens the same). */
export function indexingPool(config: Config, databaseUrl: string): Sql {
  return ownerPool(databaseUrl, Math.min(config.DATABASE_POOL_SIZE, 10), config.DATABASE_POOL_MODE)
}

export async function startIndexingService(config: Config, databaseUrl: string, options: IndexingServiceOptions): Promise<RunningIndexingService> {
  const { log, store } = options
  const embedder = serviceEmbedder(config)
  const sql = indexingPool(config, databaseUrl)
  const query: Query = async (text, params) => await sql.unsafe(text, params as never[]) as never
  const metrics = createMetrics(sql)
  const count = (outcome: PipelineOutcome) => {
    if (outcome.status !== 'superseded') metrics.indexed.inc({ outcome: outcome.status })
  }

  let runner: JobRunner | null = null
  if (options.runner !== false) {
    try {
      runner = await startRunner(databaseUrl, { store, embedder, concurrency: config.INDEXING_CONCURRENCY, log, onOutcome: count,
        poolMode: config.DATABASE_POOL_MODE })
    } catch (error) {
      await sql.end({ timeout: 5 })
      throw error
    }
  }

  const routes = indexingRoutes({ config, sql, query, store, embedder, metrics, log, count })
  return startServiceServer(routes, {
    name: 'indexing', token: config.INDEXING_TOKEN, requestTimeoutMs: config.REQUEST_TIMEOUT_MS, log,
    port: options.port ?? config.INDEXING_PORT, runner, sql,
  })
}

interface Deps {
  config: Config
  sql: Sql
  query: Query
  store: ObjectStore | null
  embedder: EmbeddingModel | null
  metrics: IndexingMetrics
  log: Logger
  count: (outcome: PipelineOutcome) => void
}

/** A path's file_id, decoded; one that no file can have is simply not found. */
function pathFileId(req: ServiceRequest): string {
  const raw = req.params?.file_id ?? ''
  let fileId: string
  try {
    fileId = decodeURIComponent(raw)
  } catch {
    throw fileNotFound(raw)
  }
  if (!FILE_ID_PATTERN.test(fileId)) throw fileNotFound(fileId)
  return fileId
}

/** The text search configuration a language name selects; an unknown one is an issue at path. */
async function searchLanguage(sql: Sql, name: string | null | undefined, path: string): Promise<{ language: string } | { issue: Issue }> {
  if (name === null || name === undefined) return { language: 'english' }
  // A configuration is named by a plain identifier; anything else is no configuration.
  if (!/^[A-Za-z0-9_]{1,63}$/.test(name)) return { issue: { path, message: `unknown text search configuration (english, german, simple, ...)` } }
  const [row] = await sql<{ language: string | null }[]>`select app.search_language(${name})::text as language`
  if (!row?.language) return { issue: { path, message: `unknown text search configuration "${name}" (english, german, simple, ...)` } }
  return { language: row.language }
}

interface FileRow {
  file_id: string
  status: 'queued' | 'running' | 'completed' | 'failed'
  reason: string | null
  content: string | null
  chunk_count: number
}

function indexingRoutes(deps: Deps): ServiceRoute[] {
  const { config, sql, query, store, embedder, metrics, log, count } = deps
  const uploadMaxBytes = limit('indexing.uploadMaxBytes')

  const upload: Handler = async (req, res) => {
    const parsed = await readUpload(req, uploadMaxBytes)
    const issues = parsed.ok ? [] : parsed.issues
    // The language is checked with the other fields, so one answer lists every problem.
    const language = await searchLanguage(sql, parsed.ok ? parsed.form.language : parsed.language, 'metadata.language')
    if ('issue' in language) issues.push(language.issue)
    if (!parsed.ok || 'issue' in language) throw invalidBody('The upload does not have the expected fields.', issues)
    const { form } = parsed
    const lang = language.language
    const accepted = await sql.begin(async (tx) => {
      const [row] = await tx<{ file: unknown }[]>`
        select app.index_accept(${form.fileId}, ${form.fileName}, ${form.bytes}, ${tx.json(form.metadata as never)},
                                ${lang}::regconfig, ${!form.sync}) as file`
      const [current] = await tx<{ revision: number }[]>`select revision from app.index_files where file_id = ${form.fileId}`
      return { row, revision: current!.revision }
    })
    metrics.uploads.inc({ mode: form.sync ? 'sync' : 'background' })
    if (!form.sync) {
      writeJson(res, 202, { file_id: form.fileId, status: 'queued' })
      return
    }
    let outcome: PipelineOutcome
    try {
      outcome = await indexFile({ query, store, log, embedder }, form.fileId, accepted.revision)
    } catch (error) {
      // A dependency that is down: the file goes to the background queue rather than
      // staying claimed by a request that gave up on it.
      await sql`select app.enqueue('index_file', ${sql.json({ fileId: form.fileId, revision: accepted.revision })}, ${`index_file:${form.fileId}`})`
        .catch(() => {})
      throw error
    }
    count(outcome)
    const [settled] = await sql<FileRow[]>`select file_id, status, reason, chunk_count from app.index_files where file_id = ${form.fileId}`
    if (!settled) throw fileNotFound(form.fileId)
    writeJson(res, 200, { file_id: settled.file_id, status: settled.status, reason: settled.reason, chunks: settled.chunk_count })
  }

  const statuses: Handler = async (req, res) => {
    const body = await jsonBody(req, statusesBody)
    const [row] = await sql<{ statuses: unknown }[]>`
      select app.index_statuses(string_to_array(${fileIdList(body.file_ids)}::text, ','), true) as statuses`
    writeJson(res, 200, { statuses: row?.statuses ?? [] })
  }

  const search: Handler = async (req, res) => {
    const input = await jsonBody(req, searchBody)
    const language = await searchLanguage(sql, input.language, 'language')
    if ('issue' in language) throw invalidBody('The body does not have the expected shape.', [language.issue])
    const started = performance.now()
    // Vectors join the ranking when the deployment gives the service an embedder.
    const embedding = await queryEmbedding(deps.embedder, input.query)
    const body = await searchPassages(sql, { query: input.query, fileIds: input.file_ids, topK: input.top_k,
      threshold: input.similarity_threshold, embedding, language: language.language, includeMetadata: input.include_metadata })
    metrics.searches.inc()
    metrics.searchSeconds.observe((performance.now() - started) / 1000)
    writeJsonText(res, 200, body)
  }

  const content: Handler = async (req, res) => {
    const fileId = pathFileId(req)
    // The service's own uploads only: the platform's documents are read through the API, under its policies.
    const [row] = await sql<FileRow[]>`select file_id, status, reason, content from app.index_files
                                        where file_id = ${fileId} and organization_id is null and website_page_id is null`
    if (!row) throw fileNotFound(fileId)
    writeJson(res, 200, { file_id: row.file_id, status: row.status, reason: row.reason, content: row.status === 'completed' ? row.content ?? '' : null })
  }

  const compare: Handler = async (req, res) => {
    const body = await jsonBody(req, compareBody)
    const rows = await sql<FileRow[]>`
      select file_id, status, reason, content from app.index_files
       where file_id in (${body.file_id_a}, ${body.file_id_b}) and status = 'completed' and organization_id is null
         and website_page_id is null`
    const text = (fileId: string) => rows.find((row) => row.file_id === fileId)?.content ?? null
    const a = text(body.file_id_a)
    const b = text(body.file_id_b)
    const missing = [...new Set([a === null ? body.file_id_a : null, b === null ? body.file_id_b : null].filter((id): id is string => id !== null))]
    if (missing.length > 0) {
      throw new ServiceError(404, 'FILE_NOT_FOUND', 'A file to compare is unknown or not indexed (completed) yet.', { file_ids: missing })
    }
    writeJson(res, 200, await compareTexts(a!, b!))
  }

  const remove: Handler = async (req, res) => {
    const fileId = pathFileId(req)
    const [row] = await sql<{ deleted: boolean }[]>`select app.index_delete(${fileId}) as deleted`
    if (!row?.deleted) throw fileNotFound(fileId)
    res.statusCode = 204
    res.end()
  }

  return [
    { method: 'POST', path: '/api/v1/documents/upload', handle: upload },
    { method: 'POST', path: '/api/v1/documents/statuses', handle: statuses },
    { method: 'POST', path: '/api/v1/documents/compare', handle: compare },
    { method: 'POST', path: '/api/v1/search', handle: search },
    { method: 'GET', path: '/api/v1/documents/:file_id/content', handle: content },
    { method: 'DELETE', path: '/api/v1/documents/:file_id', handle: remove },
    ...commonRoutes({
      sql, metricsName: 'rag', registry: metrics.registry, metricsToken: config.METRICS_BEARER_TOKEN,
      title: 'Indexing service reference', document: () => indexingDocument(INDEXING_API_VERSION),
    }),
  ]
}
