// Knowledge entries (/api/v1/knowledge-entries) and the knowledge search
// (POST /api/v1/knowledge/search) over entries, hub documents and the project files
// the caller may read (docs/knowledge.md). Rules in db/functions/0131_knowledge.sql.
import * as v from 'valibot'
import type { Route } from './route.ts'
import { integerParam, uuidParam } from '../transport/validation.ts'
import { component } from '../openapi/components.ts'
import { limit } from '../core/limits.ts'
import type { QueryEmbedder } from '../core/indexing/query-embedder.ts'

const timestamp = v.pipe(v.number(), v.integer(), v.description('Epoch milliseconds'))
const CONTENT_MAX_BYTES = limit('knowledge.contentMaxBytes')
const TITLE_MAX_UNITS = limit('knowledge.titleMaxUnits')
const MAX_TAGS = limit('knowledge.maxTags')
const TAG_MAX_UNITS = limit('knowledge.tagMaxUnits')
const QUERY_MAX_UNITS = limit('knowledge.searchQueryMaxUnits')
const MAX_TOP_K = limit('knowledge.searchMaxTopK')
/** An entry at its largest, with room for JSON escapes, its title and tags. */
const ENTRY_BODY_LIMIT = 2 * CONTENT_MAX_BYTES + 1024 * 1024

const notBlank = (value: string) => value.trim() !== ''
const title = v.pipe(v.string(), v.trim(), v.minLength(1, 'must not be blank'),
  v.maxLength(TITLE_MAX_UNITS, `at most ${TITLE_MAX_UNITS} characters`))
const content = v.pipe(v.string(), v.check(notBlank, 'must not be blank'),
  v.maxBytes(CONTENT_MAX_BYTES, `at most ${CONTENT_MAX_BYTES} bytes in UTF-8`))
const tags = v.pipe(
  v.array(v.pipe(v.string(), v.trim(), v.minLength(1, 'must not be blank'), v.maxLength(TAG_MAX_UNITS, `at most ${TAG_MAX_UNITS} characters`))),
  v.maxLength(MAX_TAGS, `at most ${MAX_TAGS} tags`),
  v.description('Trimmed; a repeated tag is kept once'))

const entry = component('KnowledgeEntry', v.strictObject({
  id: v.string(), title: v.string(), content: v.string(), tags: v.array(v.string()),
  indexing: v.strictObject({
    status: v.pipe(v.picklist(['indexing', 'indexed', 'failed']), v.description('indexing until its passages are searchable')),
    error: v.pipe(v.nullable(v.string()), v.description('Why indexing failed')),
  }),
  createdAt: timestamp, updatedAt: timestamp,
}))

const searchResult = component('KnowledgeSearchResult', v.strictObject({
  score: v.pipe(v.number(), v.description('Reciprocal-rank fusion of the signals in use over its maximum: 1 is ranked first by every signal')),
  content: v.pipe(v.string(), v.description('The passage')),
  page: v.pipe(v.nullable(v.pipe(v.number(), v.integer())), v.description('The page of the file it came from, where the format has pages')),
  heading: v.pipe(v.nullable(v.string()), v.description('The heading the passage sits under')),
  source: v.strictObject({
    type: v.picklist(['document', 'file', 'knowledge_entry']),
    id: v.string(),
    name: v.pipe(v.string(), v.description('The document\'s or file\'s name, or the entry\'s title')),
    projectId: v.optional(v.pipe(v.string(), v.description('A project file\'s project'))),
  }),
}))

const idParams = v.strictObject({ id: uuidParam })

/**
 * With an embedder, the knowledge search's query is embedded with the caller's
 * organization's embeddings model before the operation, which ranks by that vector too.
 */
export const knowledgeRoutes = (embedder: QueryEmbedder | null): Route[] => [
  {
    kind: 'operation', method: 'GET', path: '/api/v1/knowledge-entries', tag: 'Knowledge', operation: 'knowledge_entries_list',
    family: 'keyset', summary: 'List the organization\'s knowledge entries, newest first', errors: [400],
    query: v.strictObject({ limit: v.optional(integerParam(1)), cursor: v.optional(v.string()) }),
    response: v.strictObject({ page: v.array(entry), isDone: v.boolean(), continueCursor: v.string() }),
  },
  {
    kind: 'operation', method: 'POST', path: '/api/v1/knowledge-entries', tag: 'Knowledge', operation: 'knowledge_entry_create',
    summary: 'Create a knowledge entry; it is queued for indexing at once', status: 201, errors: [400, 403],
    bodyLimit: ENTRY_BODY_LIMIT, body: v.strictObject({ title, content, tags: v.optional(tags) }), response: entry,
    location: (body) => `/api/v1/knowledge-entries/${body.id}`,
  },
  {
    kind: 'operation', method: 'GET', path: '/api/v1/knowledge-entries/:id', tag: 'Knowledge', operation: 'knowledge_entry_get',
    summary: 'Read a knowledge entry', errors: [404], params: idParams, response: entry,
  },
  {
    kind: 'operation', method: 'PATCH', path: '/api/v1/knowledge-entries/:id', tag: 'Knowledge', operation: 'knowledge_entry_update',
    summary: 'Change a knowledge entry: the fields sent replace the stored ones; a new title or content is indexed again',
    errors: [400, 403, 404], params: idParams, bodyLimit: ENTRY_BODY_LIMIT,
    body: v.strictObject({ title: v.optional(title), content: v.optional(content), tags: v.optional(tags) }), response: entry,
  },
  {
    kind: 'operation', method: 'DELETE', path: '/api/v1/knowledge-entries/:id', tag: 'Knowledge', operation: 'knowledge_entry_delete',
    summary: 'Delete a knowledge entry and its passages', status: 204, errors: [403, 404], params: idParams,
  },
  {
    kind: 'operation', method: 'POST', path: '/api/v1/knowledge/search', tag: 'Knowledge', operation: 'knowledge_search',
    summary: 'Search the passages of knowledge entries, hub documents and the project files you may read, best first',
    errors: [400, 404],
    body: v.strictObject({
      query: v.pipe(v.string(), v.check(notBlank, 'must not be blank'), v.maxLength(QUERY_MAX_UNITS, `at most ${QUERY_MAX_UNITS} characters`),
        v.description('Words and "quoted phrases" (web search syntax: or, -word)')),
      topK: v.optional(v.pipe(v.number(), v.integer('must be a whole number'), v.minValue(1), v.maxValue(MAX_TOP_K),
        v.description('How many passages at most; 8 when not sent'))),
      similarityThreshold: v.optional(v.pipe(v.number(), v.minValue(0), v.maxValue(1),
        v.description('The lowest score answered'))),
      language: v.optional(v.pipe(v.string(), v.minLength(1), v.maxLength(63),
        v.description('A PostgreSQL text search configuration (english, german, simple, ...); english when not sent'))),
      projectId: v.optional(v.pipe(v.string(), v.minLength(1), v.maxLength(200),
        v.description('Only this project\'s files among project files (entries and hub documents always); 404 when you cannot see it'))),
    }),
    response: v.strictObject({ results: v.array(searchResult) }),
    // The query's vector, when the organization has an embeddings model that answers in time.
    observe: async (input, caller) =>
      ({ queryEmbedding: embedder ? await embedder(caller.organizationId, (input.body as { query: string }).query) : null }),
  },
]
