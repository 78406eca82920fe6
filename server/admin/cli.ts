// `npm run --silent admin -- <command>`: operator commands. JSON on stdout and
// nothing else; problems go to stderr with a non-zero exit.
import { readFile } from 'node:fs/promises'
import { parseArgs } from 'node:util'
import * as v from 'valibot'
import { loadConfig } from '../core/config.ts'
import { resolveDatabase } from '../core/db/database.ts'
import { ownerPool, type Sql } from '../core/db/connection.ts'
import { migrate } from '../core/db/migrate.ts'
import { addMember, addModel, createKey, createOrganization, createUser, grantProjectAccess, revokeKey, seed, seedSchema, setUploadPolicy } from './operations.ts'

const usage = `commands:
  migrate
  seed --file F            (F may be - for standard input)
  org create --slug S --name N
  org upload-policy --org S [--max-bytes N] [--extensions pdf,txt,...]   (omitted: the service default)
  user create --email E [--name N] [--password P] [--verified]
  member add --org S --email E --role owner|admin|developer|editor|member [--disabled]
  key create --email E --name N [--expires-at EPOCH_MS]
  key revoke --id KEY_ID
  project grant --org S --project NAME (--email E | --team T) --level read|edit
  model add --org S --id M --provider P --context-window N [--max-output-tokens N] [--default]`

const options = {
  file: { type: 'string' }, slug: { type: 'string' }, name: { type: 'string' }, email: { type: 'string' },
  password: { type: 'string' }, verified: { type: 'boolean' }, org: { type: 'string' }, role: { type: 'string' },
  disabled: { type: 'boolean' }, 'expires-at': { type: 'string' }, id: { type: 'string' }, project: { type: 'string' },
  team: { type: 'string' }, level: { type: 'string' }, provider: { type: 'string' },
  'context-window': { type: 'string' }, 'max-output-tokens': { type: 'string' }, default: { type: 'boolean' },
  'max-bytes': { type: 'string' }, extensions: { type: 'string' },
} as const

class UsageError extends Error {}

function required(values: Record<string, unknown>, name: string): string {
  const value = values[name]
  if (typeof value !== 'string' || value === '') throw new UsageError(`--${name} is required`)
  return value
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

async function runCommand(sql: Sql, databaseUrl: string, words: string[], values: Record<string, unknown>): Promise<unknown> {
  const command = words.join(' ')
  switch (command) {
    case 'migrate':
      return migrate(sql, databaseUrl)
    case 'seed': {
      const file = required(values, 'file')
      const text = file === '-' ? await readStdin() : await readFile(file, 'utf8')
      const parsed = v.safeParse(seedSchema, JSON.parse(text))
      if (!parsed.success) {
        throw new UsageError(`seed file: ${parsed.issues.map((i) => `${v.getDotPath(i) ?? ''} ${i.message}`).join('; ')}`)
      }
      await migrate(sql, databaseUrl)
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
      await addMember(sql, required(values, 'org'), required(values, 'email'), required(values, 'role'), values.disabled === true)
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
        { email: values.email as string | undefined, team: values.team as string | undefined }, required(values, 'level'))
      return { ok: true }
    }
    case 'model add':
      await addModel(sql, required(values, 'org'), {
        id: required(values, 'id'), providerSlug: required(values, 'provider'),
        contextWindow: integer(required(values, 'context-window'), 'context-window')!,
        maxOutputTokens: integer(values['max-output-tokens'] as string | undefined, 'max-output-tokens'),
        default: values.default === true,
      })
      return { ok: true }
    default:
      throw new UsageError(`unknown command "${command}"\n${usage}`)
  }
}

async function main(): Promise<number> {
  let parsed
  try {
    parsed = parseArgs({ args: process.argv.slice(2), options, allowPositionals: true, strict: true })
  } catch (error) {
    process.stderr.write(`${(error as Error).message}\n${usage}\n`)
    return 2
  }
  const config = loadConfig()
  const database = await resolveDatabase(config)
  const sql = ownerPool(database.url, 1)
  try {
    const result = await runCommand(sql, database.url, parsed.positionals, parsed.values)
    process.stdout.write(JSON.stringify(result, null, 2) + '\n')
    return 0
  } catch (error) {
    process.stderr.write(`${error instanceof UsageError ? '' : 'error: '}${(error as Error).message}\n`)
    return error instanceof UsageError ? 2 : 1
  } finally {
    await sql.end({ timeout: 5 })
    await database.stop()
  }
}

process.exit(await main())
