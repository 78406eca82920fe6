// `npm run check:migrations`: forward-only, expand-then-contract migrations, checked
// against a previous release in a git repository made here, and against this
// repository itself.
import { execFile, execFileSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, renameSync, rmSync, unlinkSync, writeFileSync, appendFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'
import t, { type Test } from 'tap'
import { checkMigrations, removalsIn } from '../../server/admin/check-migrations.ts'
import { root, tsxLoader } from '../ops/process.ts'

const run = promisify(execFile)
const script = path.join(root, 'server/admin/check-migrations.ts')

function git(repo: string, ...args: string[]): string {
  return execFileSync('git', ['-C', repo, '-c', 'user.email=release@example.test', '-c', 'user.name=Release',
    '-c', 'commit.gpgsign=false', '-c', 'tag.gpgsign=false', ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] })
}

function write(repo: string, file: string, text: string): void {
  mkdirSync(path.dirname(path.join(repo, file)), { recursive: true })
  writeFileSync(path.join(repo, file), text)
}

// Release v0.1.0: its code reads widgets (id, label), the function widget_label, the
// type color and the table scraps; it no longer names old_cache nor widgets.spare.
const release: Record<string, string> = {
  'db/schema/0001_widgets.sql': [
    'create table app.widgets (id int primary key, label text, spare text);',
    'create table app.scraps (id int);',
    'create table app.old_cache (k text);',
    "create type app.color as enum ('red', 'blue');",
  ].join('\n') + '\n',
  'db/schema/0003_more.sql': 'create table app.extras (id int);\n',
  'db/functions/0001_widgets.sql':
    'create or replace function app.widget_label(widget int) returns text language sql as $$ select label from app.widgets where id = widget $$;\n',
  'db/policies/widgets.sql': 'alter table app.widgets enable row level security;\n',
  'server/widgets.ts': "export const paint = (sql: any) => sql`select id, label, app.widget_label(id) from app.widgets where tone = 'red'::app.color`\n",
  'jobs/sweep.ts': 'export const sweep = (sql: any) => sql`delete from app.scraps`\n',
  'docs/notes.md': 'old_cache and spare are documented here, which is not code.\n',
}

function releasedRepo(t: Test): string {
  const repo = mkdtempSync(path.join(tmpdir(), 'tale-release-'))
  t.teardown(() => rmSync(repo, { recursive: true, force: true }))
  git(repo, 'init', '-q')
  for (const [file, text] of Object.entries(release)) write(repo, file, text)
  git(repo, 'add', '.')
  git(repo, 'commit', '-q', '-m', 'v0.1.0')
  git(repo, 'tag', 'v0.1.0')
  return repo
}

const migration = (repo: string, text: string, name = '0004_next.sql') => write(repo, `db/schema/${name}`, text)

async function cli(repo: string, args: string[] = [], env: Record<string, string> = {}) {
  try {
    const { stdout, stderr } = await run(process.execPath, ['--import', tsxLoader, script, ...args],
      { cwd: repo, env: { ...process.env, ...env }, encoding: 'utf8', timeout: 120_000 })
    return { code: 0, stdout, stderr }
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string }
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr }
  }
}

t.test('statements are read for drops and renames, outside comments and function bodies', async (t) => {
  const found = removalsIn(`
    -- drop table app.commented;
    create function app.f() returns void language plpgsql as $$ begin execute 'drop table app.dynamic'; end $$;
    drop table if exists app.gone, "app"."Other" cascade;
    alter table app.things drop column if exists old_col, add column x int, drop constraint things_check;
    alter table only app.things rename column a to b;
    alter table app.things rename to stuff;
    alter table app.things rename constraint c1 to c2;
    drop function app.do_it(uuid, text);
    alter function app.do_it(uuid) rename to done_it;
    drop type app.status;
    drop view app.v;
    drop index app.x_idx;
    alter table app.t drop y;`).map((r) => `${r.action} ${r.kind} ${r.table ? `${r.table}.` : ''}${r.name}`)
  t.same(found, ['drop table gone', 'drop table other', 'drop column things.old_col', 'rename column things.a', 'rename table things',
    'drop function do_it', 'rename function do_it', 'drop type status', 'drop view v', 'drop column t.y'])
})

t.test('an additive release passes', async (t) => {
  const repo = releasedRepo(t)
  migration(repo, 'create table app.gizmos (id int);\nalter table app.widgets add column size int;\n')
  const result = await cli(repo)
  t.equal(result.code, 0, result.stderr)
  t.match(result.stdout, /compared with v0\.1\.0: 2 released migrations, 1 new \(0004_next\.sql\)/)
  t.match(result.stdout, /migrations: ok/)
})

t.test('contracting what the previous release no longer names passes, whatever the docs say', async (t) => {
  const repo = releasedRepo(t)
  migration(repo, 'drop table app.old_cache;\nalter table app.widgets drop column spare;\n'
    + "create function app.g() returns void language plpgsql as $$ begin execute 'drop table app.scraps'; end $$;\n")
  t.same(checkMigrations(repo).problems, [])
})

t.test('a new migration may not take away what the previous release still names', async (t) => {
  const cases: [string, string, RegExp][] = [
    ['a table its job deletes from', 'drop table app.scraps;', /drops table scraps, which v0\.1\.0 still names \(jobs\/sweep\.ts\)/],
    ['a column its code reads', 'alter table app.widgets drop column label;', /drops column widgets\.label, which v0\.1\.0 still names/],
    ['a column renamed', 'alter table app.widgets rename column label to title;', /renames column widgets\.label/],
    ['a table renamed', 'alter table app.widgets rename to gadgets;', /renames table widgets/],
    ['a function its code calls', 'drop function app.widget_label(int);', /drops function widget_label.*server\/widgets\.ts/],
    ['a type its code casts to', 'drop type app.color;', /drops type color/],
  ]
  for (const [what, text, problem] of cases) {
    const repo = releasedRepo(t)
    migration(repo, `${text}\n`)
    const { problems } = checkMigrations(repo)
    t.equal(problems.length, 1, what)
    t.match(problems[0], problem, what)
  }
})

t.test('released migration files stay as released', async (t) => {
  const edited = releasedRepo(t)
  appendFileSync(path.join(edited, 'db/schema/0001_widgets.sql'), 'create table app.late (id int);\n')
  t.match(checkMigrations(edited).problems, [/0001_widgets\.sql was released in v0\.1\.0 and has been edited/])

  const renamed = releasedRepo(t)
  renameSync(path.join(renamed, 'db/schema/0003_more.sql'), path.join(renamed, 'db/schema/0004_more.sql'))
  t.match(checkMigrations(renamed).problems, [/0003_more\.sql was released in v0\.1\.0 and has been renamed to 0004_more\.sql/])

  const removed = releasedRepo(t)
  unlinkSync(path.join(removed, 'db/schema/0003_more.sql'))
  t.match(checkMigrations(removed).problems, [/0003_more\.sql was released in v0\.1\.0 and has been removed/])

  const early = releasedRepo(t)
  migration(early, 'create table app.early (id int);\n', '0002_early.sql')
  t.match(checkMigrations(early).problems, [/0002_early\.sql is new but sorts before 0003_more\.sql/])

  const failing = await cli(edited)
  t.equal(failing.code, 1, 'the command exits 1')
  t.match(failing.stderr, /has been edited: add a new migration instead/)
})

t.test('the release to compare with: the newest tag v*, or one given', async (t) => {
  // v0.2.0 stops naming scraps (its job is gone): v0.3.0 may drop the table.
  const repo = releasedRepo(t)
  unlinkSync(path.join(repo, 'jobs/sweep.ts'))
  git(repo, 'add', '-A')
  git(repo, 'commit', '-q', '-m', 'v0.2.0')
  git(repo, 'tag', 'v0.2.0')
  migration(repo, 'drop table app.scraps;\n')
  const latest = await cli(repo)
  t.equal(latest.code, 0, latest.stderr)
  t.match(latest.stdout, /compared with v0\.2\.0/)
  const given = await cli(repo, ['v0.1.0'])
  t.equal(given.code, 1)
  t.match(given.stderr, /drops table scraps, which v0\.1\.0 still names/)
  const fromEnv = await cli(repo, [], { MIGRATIONS_BASE_REF: 'v0.1.0' })
  t.equal(fromEnv.code, 1)
  const unknown = await cli(repo, ['v9.9.9'])
  t.equal(unknown.code, 2, 'a ref that does not exist is an error of its own')
})

t.test('with no release tag, it says so and checks the file names', async (t) => {
  const repo = mkdtempSync(path.join(tmpdir(), 'tale-release-'))
  t.teardown(() => rmSync(repo, { recursive: true, force: true }))
  git(repo, 'init', '-q')
  write(repo, 'db/schema/0001_widgets.sql', release['db/schema/0001_widgets.sql']!)
  migration(repo, 'drop table app.widgets;\n', '0002_drop.sql')
  const untagged = await cli(repo)
  t.equal(untagged.code, 0, untagged.stderr)
  t.match(untagged.stdout, /no release tag v\* to compare with/)
  migration(repo, 'select 1;\n', '0002 Second.sql')
  t.match(checkMigrations(repo).problems, [/0002 Second\.sql: a migration is named NNNN_words\.sql/, /already has the number 0002/])
})

t.test('this repository passes, against its newest release or none, and against its own HEAD', async (t) => {
  const result = await cli(root)
  t.equal(result.code, 0, result.stderr)
  t.match(result.stdout, /migrations: ok/)
  t.same(checkMigrations(root, 'HEAD').problems, [])
})
