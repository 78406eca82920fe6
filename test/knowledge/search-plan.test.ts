// How app.search_chunks reads the index (docs/indexing.md "Search plans"): whatever
// plan mode the caller's session runs in, the candidates come from the rum index in
// rank order (never a bitmap of every match, sorted afterwards), and each query word
// is looked up in the vocabulary through its primary key. The plans are the
// function's own statements, read through auto_explain as notices.
import t from 'tap'
import postgres from 'postgres'
import { freshDatabase } from '../lib/db.ts'

const PASSAGES = 2_000
const WORDS = 600

// A deterministic vocabulary with a long tail: a few words in most passages, most words in few.
const vocabulary = Array.from({ length: WORDS }, (_, n) => {
  const letters = 'bcdfghklmnprstvz'
  const vowels = 'aeiou'
  let word = ''
  for (let k = n + 7, i = 0; i < 3; i++, k = Math.floor(k / 7) + n * 3 + i) word += letters[k % letters.length]! + vowels[(k >> 2) % vowels.length]!
  return `${word}${n}`
})
let seed = 42
const random = () => ((seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31)
const passage = () => Array.from({ length: 40 }, () => vocabulary[Math.floor(WORDS * random() ** 3)]).join(' ')

const db = await freshDatabase()
t.teardown(() => db.drop())
const hasRum = (await db.owner`select 1 from pg_indexes where schemaname = 'app' and indexname = 'index_chunks_search_rum_idx'`).length > 0

const files = Array.from({ length: 20 }, (_, n) => `plan-file-${n}`)
await db.owner`insert into app.index_files ${db.owner(files.map((file_id) => ({ file_id, file_name: `${file_id}.txt`, status: 'completed' })))}`
const rows = Array.from({ length: PASSAGES }, (_, n) => ({ file_id: files[n % files.length]!, ordinal: Math.floor(n / files.length), content: passage(), language: 'english' }))
for (let at = 0; at < rows.length; at += 500) await db.owner`insert into app.index_chunks ${db.owner(rows.slice(at, at + 500))}`
await db.owner`insert into app.index_words (owner, word) select app.nil_owner(), w from unnest(${vocabulary}::text[]) w`
await db.owner`analyze app.index_chunks`
await db.owner`analyze app.index_words`

const rare = vocabulary[WORDS - 3]!
const common = vocabulary[0]!
const queries = [rare, common, `${common} ${vocabulary[5]}`, `${rare.slice(0, -2)}x${rare.slice(-2)}`]

for (const mode of ['auto', 'force_custom_plan', 'force_generic_plan']) {
  t.test(`with plan_cache_mode = ${mode}`, async (t) => {
    const plans: string[] = []
    const sql = postgres(db.url, { max: 1, onnotice: (notice) => { if (/Query Text/.test(String(notice.message))) plans.push(String(notice.message)) } })
    t.teardown(() => sql.end())
    await sql.begin(async (tx) => {
      await tx`load 'auto_explain'`
      await tx.unsafe(`set local plan_cache_mode = ${mode}`)
      await tx`set local auto_explain.log_min_duration = 0`
      await tx`set local auto_explain.log_nested_statements = on`
      await tx`set local auto_explain.log_level = notice`
      // Enough calls for a generic plan to be chosen where the mode allows one (after five).
      for (let round = 0; round < 7; round++) {
        for (const query of queries) {
          const found = await tx`select file_id from app.search_chunks(${query}, ${files}::text[], 8, 0, null, 'english', null)`
          if (round === 0) t.ok(found.length > 0, `"${query}" finds passages`)
        }
      }
    })
    const searches = plans.filter((plan) => /from app\.index_chunks c/i.test(plan) && /@@/.test(plan))
    t.ok(searches.length > 0, 'the search statements were explained')
    t.same(plans.filter((plan) => /Bitmap/.test(plan)).length, 0, 'no plan reads a bitmap')
    if (hasRum) {
      const ordered = searches.filter((plan) => /Index Scan using index_chunks_search_rum_idx/.test(plan) && /Order By: \(search <=>/.test(plan))
      t.equal(ordered.length, searches.length, 'every search takes its candidates from the rum index in rank order')
    } else {
      t.comment('rum is not installed: the rank-order assertion is skipped')
    }
    const probes = plans.filter((plan) => /index_words/.test(plan) && /%/.test(plan))
    t.ok(probes.length > 0, 'the vocabulary lookups were explained')
    t.ok(probes.every((plan) => /index_words_pkey/.test(plan)), 'each query word is looked up through the vocabulary\'s key')
  })
}
