// The one statement behind POST /api/v1/search: the route sends it, and the bench's
// floor (bench/search-load.ts) sends the same, so the two differ by HTTP alone.
import type { Sql } from '../../core/db/connection.ts'
import { fileIdList } from './schemas.ts'

export interface SearchArguments {
  query: string
  /** The files searched, as given: file ids of FILE_ID_PATTERN's form (schemas.ts), sent as fileIdList. */
  fileIds: readonly string[]
  topK: number
  threshold: number
  /** The query's embedding, when the deployment gives the service an embedder. */
  embedding: readonly number[] | null
  /** A text search configuration app.search_language accepted. */
  language: string
  /** Adds each passage's file name, page, heading and ordinal, and its file's metadata. */
  includeMetadata: boolean
}

/**
 * The route's answer, {results: [...]}, as PostgreSQL writes it: the service passes it
 * on as it is, as the API does its operations' bodies, rather than reading rows and
 * writing them out again (a search's passages are kilobytes of text).
 */
export async function searchPassages(sql: Sql, args: SearchArguments): Promise<string> {
  // The crawler service's pages (page:<id>) share the store and its owner but are not this service's uploads.
  const ids = args.fileIds.some(isPage) ? args.fileIds.filter((id) => !isPage(id)) : args.fileIds
  const files = fileIdList(ids)
  // As an array literal: the cast makes it real[] whatever the driver would infer.
  const vector = args.embedding && args.embedding.every(Number.isFinite) ? `{${args.embedding.join(',')}}` : null
  const [row] = await sql<[{ body: string }]>`
    select json_build_object('results', coalesce(json_agg(case
             when ${args.includeMetadata}::boolean then json_build_object(
               'file_id', s.file_id, 'content', s.content, 'score', least(1, greatest(0, s.score)),
               'metadata', f.metadata || jsonb_build_object('file_name', f.file_name, 'page', s.page, 'heading', s.heading,
                                                            'ordinal', s.ordinal))
             else json_build_object('file_id', s.file_id, 'content', s.content, 'score', least(1, greatest(0, s.score)))
           end order by s.score desc, s.file_id, s.ordinal), '[]'))::text as body
      from app.search_chunks(${args.query}, string_to_array(${files}::text, ','), ${args.topK}, ${args.threshold},
                             ${vector}::real[], ${args.language}::regconfig, null) s
      join app.index_files f on f.file_id = s.file_id`
  return row.body
}

const isPage = (id: string) => id.startsWith('page:')
