// The indexing pipeline, one code path for the indexing service (uploads, sync or in
// the background) and the worker's index_file job (project files, hub documents,
// knowledge entries): claim a revision, read its bytes, extract, chunk, embed, and
// settle it completed or failed in SQL (db/functions/0130_index_store.sql).
//
// A file whose type a library cannot read fails with a reason; only a dependency
// that is down (the database, the object store) throws, so the job is retried.
import { buffer } from 'node:stream/consumers'
import { ObjectChanged, type ObjectStore } from '../storage/object-store.ts'
import { chunkSections, type Chunk } from './chunk.ts'
import { embed, type EmbeddingModel } from './embeddings.ts'
import { QUERY_EMBED_TIMEOUT_MS } from './query-embedder.ts'
import { extractText } from './extract.ts'
import { MAX_TEXT_CHARS } from './formats/common.ts'

/** Runs one SQL statement with positional parameters (pg or postgres.js, owner connection). */
export type Query = <T extends object = Record<string, unknown>>(text: string, params: unknown[]) => Promise<T[]>

export interface PipelineContext {
  query: Query
  store: ObjectStore | null
  /** Embeds files of no organization (the indexing service's own uploads), when configured. */
  embedder?: EmbeddingModel | null
  log?: { info: (message: string, fields?: Record<string, unknown>) => void; warn: (message: string, fields?: Record<string, unknown>) => void }
  signal?: AbortSignal
}

const TEXT_NAMES = /\.(md|txt|json|ya?ml|py|csv)$/i

/** A file that failed this many claims in a row (crashes, timeouts) is failed for good. */
export const MAX_ATTEMPTS = 5

export type PipelineOutcome =
  | { status: 'completed'; chunks: number; note: string | null }
  | { status: 'failed'; reason: string }
  | { status: 'superseded' }

interface Claim {
  file_name: string
  language: string
  organization_id: string | null
  source: 'blob' | 'object' | 'text' | null
  bytes: Buffer | null
  object_key: string | null
  object_etag: string | null
  text_content: string | null
  text_heading: string | null
  attempts: number
}

export async function indexFile(context: PipelineContext, fileId: string, revision: number): Promise<PipelineOutcome> {
  const { query } = context
  const [claim] = await query<Claim>(
    'select file_name, language::text, organization_id, source, bytes, object_key, object_etag, text_content, text_heading, attempts from app.index_claim($1, $2)',
    [fileId, revision])
  if (!claim || claim.file_name === null) return { status: 'superseded' }
  const fail = async (reason: string): Promise<PipelineOutcome> => {
    await query('select app.index_fail($1, $2, $3)', [fileId, revision, reason])
    return { status: 'failed', reason }
  }
  if (claim.attempts > MAX_ATTEMPTS) return fail(`indexing was interrupted ${MAX_ATTEMPTS} times`)

  const read = await readSource(context, claim)
  if ('failure' in read) return fail(read.failure)
  // Text given as text is read as its name says when that names a text type (a .md
  // hub document keeps its headings), else as one section; a knowledge entry's title
  // heads its passages, whatever it looks like.
  const asText = 'text' in read && (claim.text_heading !== null || !TEXT_NAMES.test(claim.file_name))
  const extraction = asText
    ? { ok: true as const, ...capped(read.text), heading: claim.text_heading }
    : await extractText('text' in read ? Buffer.from(read.text) : read.bytes, claim.file_name, { signal: context.signal })
  if (!extraction.ok) return fail(extraction.reason)
  const sections = 'heading' in extraction
    ? [{ text: extraction.text, ...(extraction.heading ? { heading: extraction.heading } : {}) }]
    : extraction.sections

  const chunks = chunkSections(sections)
  const content = sections.map((section) => section.text).join('\n\n')
  const [settled] = await query<{ settled: unknown }>('select app.index_complete($1, $2, $3, $4::text::jsonb, $5) as settled',
    [fileId, revision, content, JSON.stringify(chunks), extraction.note ?? null])
  if (!settled?.settled) return { status: 'superseded' }
  // Searchable by text now; vectors follow in batches, so no call holds them all.
  await embedChunks(context, claim.organization_id, fileId, revision, chunks)
  return { status: 'completed', chunks: chunks.length, note: extraction.note ?? null }
}

/** Text given as text, cut where extraction would cut a file's. */
function capped(text: string): { text: string; note?: string } {
  if (text.length <= MAX_TEXT_CHARS) return { text }
  return { text: text.slice(0, MAX_TEXT_CHARS), note: `only the first ${MAX_TEXT_CHARS} characters were indexed` }
}

type Source = { bytes: Uint8Array } | { text: string } | { failure: string }

async function readSource(context: PipelineContext, claim: Claim): Promise<Source> {
  switch (claim.source) {
    case 'text': return { text: claim.text_content ?? '' }
    case 'blob': return { bytes: claim.bytes! }
    case 'object': {
      if (!context.store) throw new Error('no object store is configured to read the document from')
      if (!claim.object_key) return { failure: 'the document has no stored bytes' }
      try {
        const stored = await context.store.get(claim.object_key, { ifMatch: claim.object_etag ?? undefined })
        if (!stored) return { failure: 'the stored bytes are missing' }
        return { bytes: await buffer(stored.body) }
      } catch (error) {
        if (error instanceof ObjectChanged) return { failure: 'the stored bytes changed after binding' }
        throw error
      }
    }
    default: return { failure: 'the uploaded bytes are missing' }
  }
}

/** Chunks embedded per provider call and written per statement. */
const EMBED_BATCH = 64

// Vectors for the chunks when the file's organization has an embeddings model (the
// service's own embedder for files of none). A provider that fails leaves the file
// searchable by full text and trigrams, and says so in the log.
async function embedChunks(context: PipelineContext, organizationId: string | null, fileId: string, revision: number,
  chunks: Chunk[]): Promise<void> {
  if (chunks.length === 0) return
  const model = organizationId ? await embeddingModel(context.query, organizationId) : context.embedder ?? null
  if (!model) return
  try {
    for (let start = 0; start < chunks.length; start += EMBED_BATCH) {
      const batch = chunks.slice(start, start + EMBED_BATCH)
      const vectors = await embed(model, batch.map((chunk) => (chunk.heading ? `${chunk.heading}\n${chunk.content}` : chunk.content)), context.signal)
      const [row] = await context.query<{ written: number }>('select app.index_embed($1, $2, $3::text::jsonb) as written',
        [fileId, revision, JSON.stringify(batch.map((chunk, index) => ({ ordinal: chunk.ordinal, embedding: vectors[index] })))])
      // A newer revision replaced this one: its own run embeds it.
      if (!row || row.written === 0) return
    }
  } catch (error) {
    context.log?.warn('embeddings failed; indexed without vectors', { model: model.id, error: String(error) })
  }
}

export async function embeddingModel(query: Query, organizationId: string): Promise<EmbeddingModel | null> {
  const [row] = await query<{ model: EmbeddingModel | null }>('select app.embedding_model($1) as model', [organizationId])
  return row?.model ?? null
}

/**
 * A query's vector for search, or null without a model, when the provider fails, or
 * after QUERY_EMBED_TIMEOUT_MS (or `signal`): a search never waits long on a provider.
 */
export async function queryEmbedding(model: EmbeddingModel | null, text: string, signal?: AbortSignal): Promise<number[] | null> {
  if (!model) return null
  const limit = AbortSignal.timeout(QUERY_EMBED_TIMEOUT_MS)
  try {
    return (await embed(model, [text], signal ? AbortSignal.any([signal, limit]) : limit))[0] ?? null
  } catch {
    return null
  }
}
