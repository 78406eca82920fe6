// The one statement behind POST /api/v1/search: the route sends it, and the bench's
// floor (bench/search-load.ts) sends the same, so the two differ by HTTP alone.
import type { Sql } from '../../core/db/connection.ts'
import { textArrayLiteral } from '../../core/db/text-array.ts'

export interface SearchArguments {
  query: string
  /** The files searched, as given. */
  fileIds: readonly string[]
  topK: number
  threshold: number
  /** The query's embedding, when the deployment gives the service an embedder. */
  embedding: readonly number[] | null
  /** A text search configuration app.search_language accepted. */
  language: string
}

export interface SearchRow {
  file_id: string
  content: string
  score: number
  page: number | null
  heading: string | null
  ordinal: number
  file_name: string
  metadata: Record<string, unknown>
}

export function searchPassages(sql: Sql, args: SearchArguments): Promise<SearchRow[]> {
  // The crawler service's pages (page:<id>) share the store and its owner but are not this service's uploads.
  const uploads = textArrayLiteral(args.fileIds.filter((id) => !id.startsWith('page:')))
  // As array literals: the casts make them text[] and real[] whatever the driver would infer.
  const vector = args.embedding && args.embedding.every(Number.isFinite) ? `{${args.embedding.join(',')}}` : null
  return sql<SearchRow[]>`
    select s.file_id, s.content, s.score, s.page, s.heading, s.ordinal, f.file_name, f.metadata
      from app.search_chunks(${args.query}, ${uploads}::text[], ${args.topK}, ${args.threshold},
                             ${vector}::real[], ${args.language}::regconfig, null) s
      join app.index_files f on f.file_id = s.file_id
     order by s.score desc, s.file_id, s.ordinal`
}
