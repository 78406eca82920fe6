// The shapes of the indexing service's requests and answers: the same valibot schemas
// check the requests and describe both in /openapi.json (openapi.ts).
import * as v from 'valibot'
import { quickArray } from '../../core/quick-array.ts'

/** The form of a file_id, as app.index_files checks it. It holds no comma (see fileIdList). */
export const FILE_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,254}$/

/**
 * File ids of that form as the service sends a list of them to PostgreSQL: one text,
 * which `string_to_array(files, ',')` splits. No id needs quoting, where the driver's
 * array serializer runs two regular expressions over each of up to 1,000 ids and
 * PostgreSQL parses a quoted literal (about 0.1 ms a search between them).
 */
export const fileIdList = (ids: readonly string[]): string => ids.join(',')
export const MAX_FILE_IDS = 1000
export const MAX_QUERY_UNITS = 2000
export const MAX_TOP_K = 100
export const DEFAULT_TOP_K = 5
export const MAX_FILE_NAME_UNITS = 255

export const fileId = v.pipe(
  v.string('must be a string'),
  v.regex(FILE_ID_PATTERN, 'must be 1 to 255 letters, digits, ".", "_", ":" or "-", starting with a letter or digit'),
  v.description('The caller\'s name for the file.'),
)

const isFileId = (value: unknown) => typeof value === 'string' && FILE_ID_PATTERN.test(value)

const fileIds = v.pipe(
  quickArray(fileId, isFileId, 'must be an array of file ids'),
  v.minLength(1, 'must name at least one file'),
  v.maxLength(MAX_FILE_IDS, `must name at most ${MAX_FILE_IDS} files`),
)

export const statusesBody = v.strictObject({ file_ids: fileIds })

export const searchBody = v.strictObject({
  query: v.pipe(v.string('must be a string'), v.maxLength(MAX_QUERY_UNITS, `must be at most ${MAX_QUERY_UNITS} characters`),
    v.check((text) => text.trim() !== '', 'must not be empty or blank'), v.description('What to look for, 1 to 2000 characters.')),
  file_ids: v.pipe(fileIds, v.description('The files searched; passages of no other file are returned.')),
  top_k: v.optional(v.pipe(v.number('must be a number'), v.integer('must be a whole number'), v.minValue(1, 'must be at least 1'),
    v.maxValue(MAX_TOP_K, `must be at most ${MAX_TOP_K}`), v.description('How many passages at most.')), DEFAULT_TOP_K),
  similarity_threshold: v.optional(v.pipe(v.number('must be a number'), v.minValue(0, 'must be at least 0'), v.maxValue(1, 'must be at most 1'),
    v.description('The lowest score a returned passage has (scores run from 0 to 1).')), 0),
  include_metadata: v.optional(v.pipe(v.boolean('must be true or false'),
    v.description('Adds each passage\'s file name, page, heading, ordinal and the file\'s metadata.')), false),
  language: v.optional(v.pipe(v.string('must be a string'), v.minLength(1, 'must not be empty'), v.maxLength(63, 'must be at most 63 characters'),
    v.description('A PostgreSQL text search configuration (english, german, simple, ...) for the query; english when omitted.'))),
})

export const compareBody = v.strictObject({ file_id_a: fileId, file_id_b: fileId })

export const fileStatus = v.picklist(['queued', 'running', 'completed', 'failed'])

// Answers.

export const acceptedAnswer = v.strictObject({ file_id: v.string(), status: v.literal('queued') })

export const settledAnswer = v.strictObject({
  file_id: v.string(),
  status: v.pipe(fileStatus, v.description('completed or failed; queued or running only when a newer upload of the same file_id replaced this one meanwhile.')),
  reason: v.nullable(v.string()),
  chunks: v.pipe(v.number(), v.integer(), v.minValue(0)),
})

export const statusesAnswer = v.strictObject({
  statuses: v.array(v.strictObject({
    file_id: v.string(),
    status: v.picklist(['queued', 'running', 'completed', 'failed', 'not_found']),
    reason: v.nullable(v.string()),
  })),
})

export const searchAnswer = v.strictObject({
  results: v.array(v.strictObject({
    file_id: v.string(),
    content: v.string(),
    score: v.pipe(v.number(), v.minValue(0), v.maxValue(1)),
    metadata: v.optional(v.looseObject({
      file_name: v.string(),
      page: v.nullable(v.pipe(v.number(), v.integer())),
      heading: v.nullable(v.string()),
      ordinal: v.pipe(v.number(), v.integer(), v.minValue(0)),
    })),
  })),
})

export const contentAnswer = v.strictObject({
  file_id: v.string(),
  status: fileStatus,
  reason: v.nullable(v.string()),
  content: v.pipe(v.nullable(v.string()), v.description('The extracted text; null until the file is completed.')),
})

export const compareAnswer = v.strictObject({
  similarity: v.pipe(v.number(), v.minValue(0), v.maxValue(1)),
  changes: v.array(v.strictObject({
    type: v.picklist(['added', 'removed']),
    text: v.string(),
    line: v.pipe(v.number(), v.integer(), v.minValue(1),
      v.description('The first line of the text in its own document: file_id_a\'s for removed, file_id_b\'s for added.')),
    lines: v.pipe(v.number(), v.integer(), v.minValue(1)),
  })),
})
