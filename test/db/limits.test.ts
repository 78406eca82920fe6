// One place for limits: db/limits.json, loaded into app.limits for SQL and read by
// TypeScript and the OpenAPI document, with no figure repeated in code.
import { cp, mkdtemp, readdir, readFile, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import postgres from 'postgres'
import t, { type Test } from 'tap'
import { freshDatabase, databaseUrl, withDatabase } from '../lib/db.ts'
import { ownerPool } from '../../server/core/db/connection.ts'
import { dbRoot, migrate } from '../../server/core/db/migrate.ts'
import { limit, limits } from '../../server/core/limits.ts'
import { rateBudgets } from '../../server/auth/rate-budgets.ts'
import { openApiDocument } from '../../server/openapi/document.ts'

async function emptyDatabase(t: Test): Promise<string> {
  const name = `tale_limits_${Math.random().toString(16).slice(2, 10)}`
  const maintenance = postgres(withDatabase(databaseUrl(), 'postgres'), { max: 1, onnotice: () => {} })
  await maintenance.unsafe(`create database "${name}"`)
  t.teardown(async () => {
    await maintenance.unsafe(`drop database if exists "${name}" with (force)`)
    await maintenance.end()
  })
  return withDatabase(databaseUrl(), name)
}

t.test('SQL reads the figures of db/limits.json', async (t) => {
  const db = await freshDatabase()
  t.teardown(() => db.drop())
  const rows = await db.owner<{ name: string; value: string; unit: string; meaning: string }[]>`
    select name, value::text, unit, meaning from app.limits order by name`
  t.same(Object.fromEntries(rows.map((r) => [r.name, { value: Number(r.value), unit: r.unit, meaning: r.meaning }])),
    limits, 'every limit, with its unit and meaning')
  const [depth] = await db.owner`select app.limit('folder.maxDepth')::int as n`
  t.equal(depth!.n, limit('folder.maxDepth'))
  await t.rejects(db.owner`select app.limit('no.such.limit')`, /unknown limit/, 'a misspelt name is an error, not a default')
})

t.test('TypeScript takes every rate budget from the file, scaled', async (t) => {
  const budgets = rateBudgets(2)
  for (const name of ['general', 'start', 'files', 'authFailures', 'webhookSender', 'webhookTrigger'] as const) {
    t.same({ perMinute: budgets[name].perMinute, burst: budgets[name].burst },
      { perMinute: limit(`rate.${name}.perMinute`) * 2, burst: limit(`rate.${name}.burst`) * 2 }, name)
  }
  t.throws(() => limit('no.such.limit'))
})

t.test('the OpenAPI document lists the limits', async (t) => {
  const document = openApiDocument([], { version: 'test' }) as { info: Record<string, unknown> }
  t.same(document.info['x-tale-limits'], limits)
})

t.test('a changed limits file is loaded again; a removed limit is gone', async (t) => {
  const url = await emptyDatabase(t)
  const root = await mkdtemp(path.join(tmpdir(), 'tale-limits-'))
  await cp(dbRoot, root, { recursive: true })
  const sql = ownerPool(url, 1)
  t.teardown(() => sql.end())
  await migrate(sql, url, root)
  t.same((await migrate(sql, url, root)).applied, [], 'unchanged, it is not loaded again')

  const changed = JSON.parse(await readFile(path.join(root, 'limits.json'), 'utf8'))
  changed['folder.maxDepth'].value = 3
  delete changed['page.defaultSize']
  await writeFile(path.join(root, 'limits.json'), JSON.stringify(changed))
  t.same((await migrate(sql, url, root)).applied, ['limits/limits.json'])
  const [depth] = await sql`select app.limit('folder.maxDepth')::int as n`
  t.equal(depth!.n, 3)
  const [gone] = await sql`select count(*)::int as n from app.limits where name = 'page.defaultSize'`
  t.equal(gone!.n, 0)

  await writeFile(path.join(root, 'limits.json'), JSON.stringify({ 'folder.maxDepth': { value: -1, unit: 'levels' } }))
  await t.rejects(migrate(sql, url, root), /limits\.json/, 'a malformed file stops the migration')
})

t.test('no function file repeats a limit\'s figure', async (t) => {
  // The figures distinctive enough to find: sizes and durations, in any spelling.
  const spellings = ['104857600', '1800', '86400', '2592000', '8388608', '900000', "'30 minutes'", "'24 hours'", "'30 days'", '8 * 1024 * 1024']
  const folder = path.join(dbRoot, 'functions')
  for (const file of await readdir(folder)) {
    const text = await readFile(path.join(folder, file), 'utf8')
    for (const spelling of spellings) t.notOk(text.includes(spelling), `${file} does not spell ${spelling}`)
    t.notMatch(text, /'perMinute', \d/, `${file} names no budget figure`)
  }
})
