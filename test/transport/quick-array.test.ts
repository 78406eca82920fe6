// quickArray (server/core/quick-array.ts) answers as v.array does: the same output for
// lists its predicate takes, and the item schema's own issues, each at its element's
// path, for lists with an element it does not.
import t from 'tap'
import * as v from 'valibot'
import fc from 'fast-check'
import { quickArray } from '../../server/core/quick-array.ts'
import { FILE_ID_PATTERN, fileId, statusesBody } from '../../server/services/indexing/schemas.ts'

const isFileId = (value: unknown) => typeof value === 'string' && FILE_ID_PATTERN.test(value)
const quick = quickArray(fileId, isFileId, 'must be an array of file ids')
const plain = v.array(fileId, 'must be an array of file ids')
const outcome = (schema: v.GenericSchema, input: unknown) => {
  const result = v.safeParse(schema, input, { abortEarly: false })
  return result.success
    ? { success: true, output: result.output }
    : { success: false, issues: result.issues.map((issue) => ({ path: v.getDotPath(issue), message: issue.message })) }
}

t.test('valid lists: taken as sent, as v.array takes them', async (t) => {
  const ids = ['a', 'bench-1', 'NULL', 'x.y_z:w-1', 'A'.repeat(255)]
  t.same(outcome(quick, ids), outcome(plain, ids))
  t.same(outcome(quick, []), { success: true, output: [] })
})

t.test('invalid lists: every issue of v.array, at its path', async (t) => {
  const input = ['ok', '', 7, 'has space', null, 'fine', 'b'.repeat(256)]
  const issues = outcome(quick, input)
  t.same(issues, outcome(plain, input))
  t.same((issues as { issues: { path: string }[] }).issues.map((i) => i.path), ['1', '2', '3', '4', '6'], 'one issue per bad element')
  t.same(outcome(quick, 'not a list'), outcome(plain, 'not a list'), 'not an array at all')
  t.same(outcome(quick, { 0: 'a' }), outcome(plain, { 0: 'a' }))
})

t.test('any input: the same answer as v.array', async (t) => {
  const element = fc.oneof(fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9._:-]{0,20}$/), fc.string({ maxLength: 8 }), fc.integer(), fc.constant(null))
  fc.assert(fc.property(fc.array(element, { maxLength: 12 }), (input) => {
    t.same(outcome(quick, input), outcome(plain, input))
  }), { seed: 7, numRuns: 300 })
})

t.test('in a body: the pipe around it still applies', async (t) => {
  t.match(outcome(statusesBody, { file_ids: [] }), { success: false, issues: [{ path: 'file_ids', message: 'must name at least one file' }] })
  t.match(outcome(statusesBody, { file_ids: ['a', 'b c'] }),
    { success: false, issues: [{ path: 'file_ids.1', message: /letters, digits/ }] })
  t.same(outcome(statusesBody, { file_ids: ['a', 'b'] }), { success: true, output: { file_ids: ['a', 'b'] } })
})
