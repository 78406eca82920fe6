// `npm run check:migrations [REF]`: keeps db/schema/ forward-only and
// expand-then-contract. During a blue-green rollout the previous release's replicas
// run against the new schema, so a release may not take away what they still read.
// Compared with the previous release (REF, else MIGRATIONS_BASE_REF, else the newest
// tag v*), it fails when:
//   - a released migration file was edited, renamed or removed (databases already
//     recorded it by file name and will never run it again);
//   - a new migration sorts before a released one (it would run in a different order
//     on a new database than on an upgraded one);
//   - a new migration drops or renames a table, view, column, function or type that
//     the previous release's code (db/functions, db/policies, server/, jobs/ at REF)
//     still names: that removal belongs to a later release, once no running code
//     names it.
// With no release to compare with it says so and checks the file names only.
// Prints what it checked on stdout; problems go to stderr, one a line, exit status 1.
import { execFileSync } from 'node:child_process'
import { readdirSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { pathToFileURL } from 'node:url'

const SCHEMA = 'db/schema'
/** Where the previous release's code lives: what its replicas still run. */
export const CODE_PATHS = ['db/functions', 'db/policies', 'server', 'jobs']
const FILE_NAME = /^\d{4}_[a-z0-9_]+\.sql$/

export type ObjectKind = 'table' | 'view' | 'column' | 'function' | 'type'

export interface Removal {
  action: 'drop' | 'rename'
  kind: ObjectKind
  /** The object's own name, unqualified and lower-case (a column's name, without its table). */
  name: string
  /** The table of a column. */
  table?: string
  statement: string
}

export interface CheckResult {
  /** The ref compared with, or null when there was none. */
  base: string | null
  /** What was checked, for people. */
  notes: string[]
  problems: string[]
}

/**
 * The statement text with comments and string and dollar-quoted literals blanked, so
 * a function body that builds a DROP in dynamic SQL is not read as one.
 */
export function stripLiterals(sql: string): string {
  let out = ''
  let i = 0
  while (i < sql.length) {
    const rest = sql.slice(i)
    if (rest.startsWith('--')) {
      const end = sql.indexOf('\n', i)
      i = end === -1 ? sql.length : end
      continue
    }
    if (rest.startsWith('/*')) {
      const end = sql.indexOf('*/', i + 2)
      i = end === -1 ? sql.length : end + 2
      out += ' '
      continue
    }
    const dollar = /^\$([A-Za-z_][A-Za-z0-9_]*)?\$/.exec(rest)
    if (dollar) {
      const end = sql.indexOf(dollar[0], i + dollar[0].length)
      i = end === -1 ? sql.length : end + dollar[0].length
      out += "''"
      continue
    }
    if (sql[i] === "'") {
      let j = i + 1
      while (j < sql.length && !(sql[j] === "'" && sql[j + 1] !== "'")) j += sql[j] === "'" ? 2 : 1
      i = j + 1
      out += "''"
      continue
    }
    out += sql[i]
    i += 1
  }
  return out
}

/** Splits on commas outside parentheses. */
function topLevelParts(text: string): string[] {
  const parts: string[] = []
  let depth = 0
  let current = ''
  for (const char of text) {
    if (char === '(') depth += 1
    if (char === ')') depth -= 1
    if (char === ',' && depth === 0) {
      parts.push(current)
      current = ''
    } else current += char
  }
  parts.push(current)
  return parts.map((p) => p.trim()).filter(Boolean)
}

/** "app"."Foo" or app.foo(uuid) as foo: the name code would spell. */
function bareName(qualified: string): string {
  const withoutArgs = qualified.replace(/\(.*$/s, '').trim()
  const last = withoutArgs.split('.').pop()!.trim()
  return last.replace(/^"(.*)"$/, '$1').toLowerCase()
}

const IDENT = String.raw`(?:"[^"]+"|[A-Za-z_][\w$]*)(?:\s*\.\s*(?:"[^"]+"|[A-Za-z_][\w$]*))?`

/** Every drop and rename of a table, view, column, function or type in a migration's text. */
export function removalsIn(sql: string): Removal[] {
  const removals: Removal[] = []
  for (const raw of stripLiterals(sql).split(';')) {
    const statement = raw.replace(/\s+/g, ' ').trim()
    if (!statement) continue
    const drop = new RegExp(String.raw`^drop (table|view|materialized view|function|procedure|routine|type|domain) (?:if exists )?(.+?)(?: (?:cascade|restrict))?$`, 'i').exec(statement)
    if (drop) {
      const word = drop[1]!.toLowerCase()
      const kind: ObjectKind = word === 'table' ? 'table' : word.endsWith('view') ? 'view' : word === 'type' || word === 'domain' ? 'type' : 'function'
      for (const target of topLevelParts(drop[2]!)) removals.push({ action: 'drop', kind, name: bareName(target), statement })
      continue
    }
    const alter = new RegExp(String.raw`^alter (table|view|materialized view|function|procedure|routine|type|domain) (?:if exists )?(?:only )?(${IDENT}(?:\s*\([^)]*\))?)\s*\*? (.+)$`, 'i').exec(statement)
    if (!alter) continue
    const word = alter[1]!.toLowerCase()
    const name = bareName(alter[2]!)
    const actions = alter[3]!
    const kind: ObjectKind = word === 'table' ? 'table' : word.endsWith('view') ? 'view' : word === 'type' || word === 'domain' ? 'type' : 'function'
    const renameColumn = new RegExp(String.raw`^rename (?:column |attribute )?(${IDENT}) to (${IDENT})`, 'i').exec(actions)
    if (/^rename to /i.test(actions)) {
      removals.push({ action: 'rename', kind, name, statement })
    } else if (renameColumn && (kind === 'table' || kind === 'view' || kind === 'type') && !/^rename (?:constraint|value) /i.test(actions)) {
      removals.push({ action: 'rename', kind: 'column', name: bareName(renameColumn[1]!), table: name, statement })
    } else if (kind === 'table' || kind === 'type') {
      for (const action of topLevelParts(actions)) {
        const column = new RegExp(String.raw`^drop (?:column |attribute )?(?:if exists )?(${IDENT})`, 'i').exec(action)
        if (!column || /^drop (?:constraint|default|not null|identity|expression)\b/i.test(action)) continue
        removals.push({ action: 'drop', kind: 'column', name: bareName(column[1]!), table: name, statement })
      }
    }
  }
  return removals
}

function git(repo: string, args: string[]): string {
  return execFileSync('git', ['-C', repo, ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], maxBuffer: 64 * 1024 * 1024 })
}

/** The files under paths at ref that name word (case-insensitive, whole words, as SQL folds identifiers). */
function filesNaming(repo: string, ref: string, word: string): Set<string> {
  try {
    const out = git(repo, ['grep', '-l', '-i', '-w', '-F', '-e', word, ref, '--', ...CODE_PATHS])
    // git grep on a tree prints REF:path.
    return new Set(out.split('\n').filter(Boolean).map((line) => line.slice(ref.length + 1)))
  } catch (error) {
    // Status 1: no file names it.
    if ((error as { status?: number }).status === 1) return new Set()
    throw error
  }
}

/** The newest tag v*, by version order, or null. */
export function latestReleaseTag(repo: string): string | null {
  const tags = git(repo, ['tag', '--list', 'v*', '--sort=-v:refname']).split('\n').filter(Boolean)
  return tags[0] ?? null
}

export function checkMigrations(repo: string, ref: string | null = latestReleaseTag(repo)): CheckResult {
  const notes: string[] = []
  const problems: string[] = []
  const current = readdirSync(path.join(repo, SCHEMA)).filter((n) => n.endsWith('.sql')).sort()
  for (const name of current) if (!FILE_NAME.test(name)) problems.push(`${SCHEMA}/${name}: a migration is named NNNN_words.sql`)
  const prefixes = new Map<string, string>()
  for (const name of current) {
    const prefix = name.slice(0, 4)
    if (prefixes.has(prefix)) problems.push(`${SCHEMA}/${name}: ${prefixes.get(prefix)} already has the number ${prefix}`)
    else prefixes.set(prefix, name)
  }
  if (ref === null) {
    notes.push('no release tag v* to compare with: checked the migration file names only')
    return { base: null, notes, problems }
  }
  git(repo, ['rev-parse', '--verify', '--quiet', `${ref}^{commit}`])
  const released = git(repo, ['ls-tree', '--name-only', `${ref}:${SCHEMA}`]).split('\n').filter((n) => n.endsWith('.sql')).sort()
  const releasedText = new Map(released.map((name) => [name, git(repo, ['show', `${ref}:${SCHEMA}/${name}`])]))
  const currentText = new Map(current.map((name) => [name, readFileSync(path.join(repo, SCHEMA, name), 'utf8')]))
  for (const [name, text] of releasedText) {
    const now = currentText.get(name)
    if (now === text) continue
    if (now !== undefined) {
      problems.push(`${SCHEMA}/${name} was released in ${ref} and has been edited: add a new migration instead`)
      continue
    }
    const renamed = [...currentText].find(([other, otherText]) => otherText === text && !releasedText.has(other))
    problems.push(renamed
      ? `${SCHEMA}/${name} was released in ${ref} and has been renamed to ${renamed[0]}: databases recorded it by its name`
      : `${SCHEMA}/${name} was released in ${ref} and has been removed: databases recorded it, and new ones need it`)
  }
  const newest = released.at(-1) ?? ''
  const added = current.filter((name) => !releasedText.has(name))
  for (const name of added) {
    if (name < newest) problems.push(`${SCHEMA}/${name} is new but sorts before ${newest} of ${ref}: number it after the released migrations`)
    for (const removal of removalsIn(currentText.get(name)!)) {
      const naming = [...filesNaming(repo, ref, removal.name)]
      // A column is still read where a file names both it and its table.
      const readers = removal.kind === 'column'
        ? naming.filter((file) => filesNaming(repo, ref, removal.table!).has(file))
        : naming
      if (readers.length === 0) continue
      const what = removal.kind === 'column' ? `column ${removal.table}.${removal.name}` : `${removal.kind} ${removal.name}`
      problems.push(`${SCHEMA}/${name} ${removal.action === 'drop' ? 'drops' : 'renames'} ${what}, which ${ref} still names `
        + `(${readers.slice(0, 3).join(', ')}${readers.length > 3 ? `, and ${readers.length - 3} more` : ''}): `
        + `expand now, contract in a later release once no running code names it`)
    }
  }
  notes.push(`compared with ${ref}: ${released.length} released migrations, ${added.length} new (${added.join(', ') || 'none'})`)
  return { base: ref, notes, problems }
}

function main(): number {
  const repo = process.cwd()
  const given = process.argv[2] ?? process.env.MIGRATIONS_BASE_REF
  let result: CheckResult
  try {
    result = checkMigrations(repo, given || latestReleaseTag(repo))
  } catch (error) {
    const detail = (error as { stderr?: string }).stderr?.trim() || (error as Error).message
    process.stderr.write(`check:migrations could not run: ${detail}\n`)
    return 2
  }
  for (const note of result.notes) process.stdout.write(`${note}\n`)
  for (const problem of result.problems) process.stderr.write(`${problem}\n`)
  process.stdout.write(result.problems.length === 0 ? 'migrations: ok\n' : `migrations: ${result.problems.length} problem(s)\n`)
  return result.problems.length === 0 ? 0 : 1
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) process.exitCode = main()
