// textArrayLiteral: PostgreSQL reads the literal back as exactly the strings given,
// whatever they hold, by the fast path (nothing to escape) and the escaping one.
import postgres from 'postgres'
import t from 'tap'
import { databaseUrl } from '../lib/db.ts'
import { textArrayLiteral } from '../../server/core/db/text-array.ts'

const sql = postgres(databaseUrl(), { max: 1, onnotice: () => {} })
t.teardown(() => sql.end())

const readBack = async (values: string[]) =>
  (await sql<{ value: string[] }[]>`select ${textArrayLiteral(values)}::text[] as value`)[0]!.value

t.test('plain ids, the fast path: NULL and null stay strings', async (t) => {
  const ids = ['bench-0', 'NULL', 'null', 'page:1', 'a.b_c-d:e']
  t.same(await readBack(ids), ids)
  t.same(await readBack([]), [], 'no ids: an empty array')
})

t.test('what an array literal would read as syntax is text', async (t) => {
  const hostile = ['a,b', '{x}', ' spaced ', '', 'say "hi"', 'back\\slash', '\\"', '"', 'tab\there', 'line\nbreak', 'NULL']
  t.same(await readBack(hostile), hostile)
  for (const value of hostile) t.same(await readBack([value]), [value], `alone: ${JSON.stringify(value)}`)
})
