// How the contact import's statement is planned (docs/records.md "The import's
// plan"): whatever the table's statistics say, contacts are read only key by key
// through their key's unique index, no step of the import is run again for each row
// of another, no SQL function is called per row (each is inlined), and no JIT
// compilation is paid for. The statistics here are the worst kind: taken while the
// table was empty, so the planner believes the organization holds no contacts while
// it holds thousands. The plans are read through auto_explain as notices.
import t, { type Test } from 'tap'
import postgres from 'postgres'
import { freshDatabase } from '../lib/db.ts'
import { seed } from '../../server/admin/operations.ts'
import { acme, seedFile } from '../lib/fixtures.ts'

const ROWS = 2_000

const db = await freshDatabase()
t.teardown(() => db.drop())
const seeded = await seed(db.owner, seedFile(acme()))
const org = seeded.organizations.acme!.id
const eddie = seeded.users['eddie@acme.test']!.id

// Statistics of an empty table that has pages: a batch of contacts written, deleted
// and the table analyzed, as autovacuum would after a purge.
await db.owner`insert into app.contacts (organization_id, external_id, name, created_by)
               select ${org}, 'gone-' || g, 'Gone', ${eddie} from generate_series(1, 3000) g`
await db.owner`delete from app.contacts`
await db.owner`analyze app.contacts`
const [stats] = await db.owner<{ reltuples: number; relpages: number }[]>`
  select reltuples, relpages from pg_class where oid = 'app.contacts'::regclass`
t.ok(stats!.reltuples === 0 && stats!.relpages > 0, 'the statistics say the table is empty')

const rows = (company: string) => Array.from({ length: ROWS }, (_, i) => ({
  externalId: `crm-${i}`, email: `person${i}@example.test`, name: `Person ${i}`, company,
  attributes: { seats: i },
}))

/** The import as an editor's request runs it, with the plans of its statements. */
async function importExplained(contacts: unknown[]) {
  const plans: string[] = []
  const sql = postgres(db.url, { max: 1, onnotice: (notice) => { if (/Query Text/.test(String(notice.message))) plans.push(String(notice.message)) } })
  try {
    const answer = await sql.begin(async (tx) => {
      await tx`load 'auto_explain'`
      await tx`set local jit = on`
      await tx`set local jit_above_cost = 0` // any plan would be compiled, unless the import says otherwise
      await tx`set local auto_explain.log_min_duration = 0`
      await tx`set local auto_explain.log_nested_statements = on`
      await tx`set local auto_explain.log_analyze = on`
      await tx`set local auto_explain.log_verbose = on`
      await tx`set local auto_explain.log_level = notice`
      await tx`select set_config('app.user_id', ${eddie}, true), set_config('app.org_id', ${org}, true),
                      set_config('app.role', 'editor', true)`
      await tx`set local role api`
      const [row] = await tx<{ answer: { created: number; updated: number; failed: number } }[]>`
        select api.contacts_bulk(${tx.json({ contacts: contacts } as never)}) - 'results' as answer`
      return row!.answer
    })
    const statement = plans.find((plan) => /with keyed as materialized/.test(plan))
    return { answer, statement: statement ?? '' }
  } finally {
    await sql.end()
  }
}

function holdsTheRules(t: Test, statement: string) {
  t.ok(statement, 'the import\'s statement was explained')
  // (The statement's text comes first; none of its lines reads as a plan's.)
  const plan = statement
  const contactScans = plan.split('\n').filter((line) => /Scan.* on app\.contacts /.test(line))
  t.ok(contactScans.length > 0, 'the statement reads contacts')
  t.same(contactScans.filter((line) => !/using contacts_external_key on app\.contacts /.test(line)), [],
    'every read of contacts goes through the key\'s unique index')
  const rescanned = plan.split('\n').filter((line) => /CTE Scan on /.test(line) && !/loops=1\)/.test(line))
  t.same(rescanned, [], 'no step of the import is scanned again for each row of another')
  const calls = plan.split('\n').filter((line) => /^\s*(Output|Filter|Join Filter|Hash Cond|Merge Cond|Index Cond):/.test(line))
    .filter((line) => /\bapp\.[a-z_]+\(/.test(line))
  t.same(calls, [], 'no SQL function of the service is called per row: each is inlined')
  t.notMatch(plan, /\nJIT:/, 'no JIT compilation')
  // New contacts are inserted plainly: ON CONFLICT pays a probe, a lock and a
  // confirmation per row, and serves only the changed contacts, which it updates.
  const insertedThroughConflict = plan.split('\n').map((line) => /Tuples Inserted: (\d+)/.exec(line)?.[1])
    .filter((count) => count !== undefined && count !== '0')
  t.same(insertedThroughConflict, [], 'no contact is inserted through ON CONFLICT')
}

t.test('a create of thousands of contacts, planned from statistics of an empty table', async (t) => {
  const { answer, statement } = await importExplained(rows('Acme'))
  t.same(answer, { created: ROWS, updated: 0, failed: 0 })
  holdsTheRules(t, statement)
})

t.test('a change of those contacts, with the statistics still saying the table is empty', async (t) => {
  const [still] = await db.owner<{ reltuples: number }[]>`select reltuples from pg_class where oid = 'app.contacts'::regclass`
  t.equal(still!.reltuples, 0)
  const { answer, statement } = await importExplained(rows('Globex'))
  t.same(answer, { created: 0, updated: ROWS, failed: 0 })
  holdsTheRules(t, statement)
  const [changed] = await db.owner<{ n: number }[]>`select count(*)::int as n from app.contacts where company = 'Globex'`
  t.equal(changed!.n, ROWS)
})
