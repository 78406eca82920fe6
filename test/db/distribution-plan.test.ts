// docs/operations.md "Distributing by organization (Citus)" lists the tables the plan
// distributes by organization_id and those it does not. The lists are the catalog's:
// a table added or changed later fails here until the page names it, and the message
// prints the line to paste.
import { readFileSync } from 'node:fs'
import path from 'node:path'
import t from 'tap'
import { freshDatabase } from '../lib/db.ts'
import { root } from '../ops/process.ts'

const page = readFileSync(path.join(root, 'docs/operations.md'), 'utf8')

/** The backticked names between <!-- marker --> and <!-- /marker -->. */
function documented(marker: string): string[] | null {
  const found = new RegExp(`<!-- ${marker} -->\\n([\\s\\S]*?)\\n<!-- /${marker} -->`).exec(page)
  return found ? [...found[1]!.matchAll(/`([a-z_]+)`/g)].map((m) => m[1]!) : null
}

const line = (names: string[]) => names.map((name) => `\`${name}\``).join(', ')

const db = await freshDatabase()
t.teardown(() => db.drop())
const tables = await db.owner<{ name: string; tenant: boolean; nullable: boolean }[]>`
  select c.relname as name, a.attname is not null as tenant, coalesce(not a.attnotnull, false) as nullable
    from pg_class c join pg_namespace n on n.oid = c.relnamespace
    left join pg_attribute a on a.attrelid = c.oid and a.attname = 'organization_id' and not a.attisdropped
   where n.nspname = 'app' and c.relkind in ('r', 'p')
   order by c.relname`

const expected: Record<string, string[]> = {
  'distributed-tables': tables.filter((x) => x.tenant).map((x) => x.name),
  'nullable-tables': tables.filter((x) => x.tenant && x.nullable).map((x) => x.name),
  'global-tables': tables.filter((x) => !x.tenant).map((x) => x.name),
}

for (const [marker, names] of Object.entries(expected)) {
  t.test(`the ${marker.replace('-', ' ')} listed are the catalog's`, async (t) => {
    t.ok(names.length > 0 || marker === 'nullable-tables', 'the catalog names some')
    t.same(documented(marker), names, `docs/operations.md between the ${marker} markers should read:\n${line(names)}`)
  })
}

t.test('every table without organization_id is placed: a reference table, one to change, or a local one', async (t) => {
  const section = page.slice(page.indexOf('<!-- /global-tables -->'), page.indexOf('Constraints that change'))
  for (const name of expected['global-tables']!) t.ok(section.includes(`\`${name}\``), `${name} is placed`)
})
