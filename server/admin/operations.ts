// Operator actions over the owner's connection: the seed file and the single
// commands of the admin CLI share them. Each calls one app.operator_* function.
import * as v from 'valibot'
import type { Sql } from '../core/db/connection.ts'
import { generateApiKey, hashApiKey, hashPassword } from '../auth/credentials.ts'
import { limit } from '../core/limits.ts'
import { rotateSigningKeys } from '../oidc/keys.ts'

const role = v.picklist(['owner', 'admin', 'developer', 'editor', 'member'])
const epochOrNull = v.nullish(v.union([v.pipe(v.number(), v.integer(), v.minValue(0)), v.pipe(v.string(), v.isoTimestamp())]))

/** What a catalog model is for; one listing embeddings ranks knowledge search by vectors. */
export const MODEL_CAPABILITIES = ['chat', 'embeddings'] as const

/** An organization's narrowing of uploads: a smaller size cap, fewer file types. */
export const uploadPolicySchema = v.strictObject({
  maxBytes: v.nullish(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(limit('upload.maxBytes')))),
  extensions: v.nullish(v.pipe(v.array(v.pipe(v.string(), v.regex(/^[a-z0-9]+$/i))), v.minLength(1))),
})
export type UploadPolicy = v.InferOutput<typeof uploadPolicySchema>

export const seedSchema = v.strictObject({
  organizations: v.optional(v.array(v.strictObject({
    slug: v.string(), name: v.string(), skillSharingPolicy: v.nullish(v.record(v.string(), v.unknown())),
    uploadPolicy: v.nullish(uploadPolicySchema),
    // The language notifications are exported in when the export names none; en when omitted.
    language: v.optional(v.picklist(['en', 'de', 'fr'], 'must be one of en, de, fr')),
  })), []),
  users: v.optional(v.array(v.strictObject({
    email: v.pipe(v.string(), v.email()),
    name: v.optional(v.string(), ''),
    password: v.nullish(v.string()),
    emailVerified: v.optional(v.boolean(), false),
    memberships: v.optional(v.array(v.strictObject({ org: v.string(), role, disabled: v.optional(v.boolean(), false) })), []),
    keys: v.optional(v.array(v.strictObject({ name: v.string(), expiresAt: epochOrNull })), []),
  })), []),
  teams: v.optional(v.array(v.strictObject({ org: v.string(), name: v.string(), members: v.optional(v.array(v.string()), []) })), []),
  projects: v.optional(v.array(v.strictObject({
    org: v.string(), name: v.string(), createdBy: v.string(),
    key: v.nullish(v.string()), description: v.nullish(v.string()), externalItemId: v.nullish(v.string()),
    access: v.optional(v.array(v.strictObject({
      email: v.optional(v.string()), team: v.optional(v.string()), level: v.picklist(['read', 'edit']),
    })), []),
  })), []),
  providers: v.optional(v.array(v.strictObject({
    org: v.string(), slug: v.string(), kind: v.literal('openai-compatible'), baseUrl: v.pipe(v.string(), v.url()),
    apiKey: v.nullish(v.string()),
  })), []),
  models: v.optional(v.array(v.strictObject({
    org: v.string(), id: v.string(), providerSlug: v.string(),
    contextWindow: v.pipe(v.number(), v.integer(), v.minValue(1)),
    maxOutputTokens: v.nullish(v.pipe(v.number(), v.integer(), v.minValue(1))),
    default: v.optional(v.boolean(), false),
    capabilities: v.optional(v.pipe(v.array(v.picklist(MODEL_CAPABILITIES)), v.minLength(1))),
  })), []),
  secrets: v.optional(v.array(v.strictObject({ org: v.string(), name: v.string(), value: v.string() })), []),
  grants: v.optional(v.array(v.strictObject({
    org: v.string(), email: v.string(),
    competence: v.picklist(['notifications.export', 'skills.publish', 'rest.act-as',
      'tale:notifications.export', 'tale:skills.publish', 'tale:rest.act-as']),
    expiresAt: epochOrNull,
  })), []),
})
export type SeedFile = v.InferOutput<typeof seedSchema>

function timestamp(value: number | string | null | undefined): Date | null {
  return value === null || value === undefined ? null : new Date(value)
}

export async function createOrganization(sql: Sql, slug: string, name: string, policy: unknown = null): Promise<string> {
  const [row] = await sql<{ id: string }[]>`select app.operator_org_create(${slug}, ${name}, ${policy === null ? null : sql.json(policy as never)}) as id`
  return row!.id
}

export async function setUploadPolicy(sql: Sql, org: string, policy: UploadPolicy): Promise<void> {
  await sql`select app.operator_upload_policy_set(app.operator_org_id(${org}), ${policy.maxBytes ?? null},
    ${policy.extensions ?? null}::text[])`
}

export async function createUser(sql: Sql, input: { email: string; name?: string; password?: string | null; emailVerified?: boolean }): Promise<string> {
  const hash = input.password ? await hashPassword(input.password) : null
  const [row] = await sql<{ id: string }[]>`
    select app.operator_user_create(${input.email}, ${input.name ?? ''}, ${hash}, ${input.emailVerified ?? false}) as id`
  return row!.id
}

export async function addMember(sql: Sql, org: string, email: string, memberRole: string, disabled = false): Promise<void> {
  await sql`select app.operator_member_add(app.operator_org_id(${org}), app.operator_user_id(${email}), ${memberRole}, ${disabled})`
}

export async function createKey(sql: Sql, email: string, name: string, expiresAt: Date | null): Promise<{ id: string; key: string }> {
  const key = generateApiKey()
  const [row] = await sql<{ id: string }[]>`
    select app.operator_key_create(app.operator_user_id(${email}), ${name}, ${hashApiKey(key)}, ${expiresAt}) as id`
  return { id: row!.id, key }
}

export async function revokeKey(sql: Sql, keyId: string): Promise<boolean> {
  const [row] = await sql<{ revoked: boolean }[]>`select app.operator_key_revoke(${keyId}) as revoked`
  return row!.revoked
}

export async function grantProjectAccess(sql: Sql, org: string, project: string, grantee: { email?: string; team?: string }, level: string): Promise<void> {
  await sql`
    select app.operator_project_grant(o.id, app.operator_project_id(o.id, ${project}),
      case when ${grantee.email ?? null}::text is null then null else app.operator_user_id(${grantee.email ?? null}) end,
      (select t.id from app.teams t where t.organization_id = o.id and lower(t.name) = lower(${grantee.team ?? null})),
      ${level})
    from (select app.operator_org_id(${org}) as id) o`
}

export async function addModel(sql: Sql, org: string, model: { id: string; providerSlug: string; contextWindow: number;
  maxOutputTokens?: number | null; default?: boolean; capabilities?: readonly string[] }): Promise<void> {
  await sql`select app.operator_model_add(app.operator_org_id(${org}), ${model.id}, ${model.providerSlug},
    ${model.contextWindow}, ${model.maxOutputTokens ?? null}, ${model.default ?? false},
    ${JSON.stringify(model.capabilities ?? ['chat'])}::text::jsonb)`
}

export async function listHarnesses(sql: Sql): Promise<unknown> {
  const [row] = await sql<{ harnesses: unknown }[]>`select app.operator_harnesses() as harnesses`
  return row!.harnesses
}

export async function addHarness(sql: Sql, id: string, name: string): Promise<void> {
  await sql`select app.operator_harness_add(${id}, ${name})`
}

/** A new signing key for the identity issuer; the one it replaces stays published for a while. */
export async function rotateIssuerKeys(sql: Sql): Promise<{ kid: string; retired: string[]; removed: string[] }> {
  return rotateSigningKeys(sql)
}

export async function removeHarness(sql: Sql, id: string): Promise<boolean> {
  const [row] = await sql<{ removed: boolean }[]>`select app.operator_harness_remove(${id}) as removed`
  return row!.removed
}

export interface SeedResult {
  organizations: Record<string, { id: string }>
  users: Record<string, { id: string; keys: Record<string, string> }>
  teams: Record<string, { id: string }>
  projects: Record<string, { id: string }>
}

/** Creates everything a seed file describes in one transaction: all of it or none. */
export async function seed(owner: Sql, file: SeedFile): Promise<SeedResult> {
  // Hash passwords before the transaction: scrypt is slow by design.
  const hashes = new Map<string, string | null>()
  for (const user of file.users) hashes.set(user.email, user.password ? await hashPassword(user.password) : null)

  return await owner.begin(async (tx) => {
    const sql = tx as unknown as Sql
    const result: SeedResult = { organizations: {}, users: {}, teams: {}, projects: {} }
    for (const org of file.organizations) {
      result.organizations[org.slug] = { id: await createOrganization(sql, org.slug, org.name, org.skillSharingPolicy ?? null) }
      if (org.uploadPolicy) await setUploadPolicy(sql, org.slug, org.uploadPolicy)
      if (org.language) await sql`select app.operator_org_language_set(app.operator_org_id(${org.slug}), ${org.language})`
    }
    for (const user of file.users) {
      const [row] = await sql<{ id: string }[]>`
        select app.operator_user_create(${user.email}, ${user.name}, ${hashes.get(user.email) ?? null}, ${user.emailVerified}) as id`
      const keys: Record<string, string> = {}
      for (const membership of user.memberships) await addMember(sql, membership.org, user.email, membership.role, membership.disabled)
      for (const key of user.keys) keys[key.name] = (await createKey(sql, user.email, key.name, timestamp(key.expiresAt))).key
      result.users[user.email] = { id: row!.id, keys }
    }
    for (const team of file.teams) {
      const [row] = await sql<{ id: string }[]>`select app.operator_team_create(app.operator_org_id(${team.org}), ${team.name}) as id`
      for (const member of team.members) {
        await sql`select app.operator_team_member_add(app.operator_org_id(${team.org}), ${row!.id}, app.operator_user_id(${member}))`
      }
      result.teams[team.name] = { id: row!.id }
    }
    for (const project of file.projects) {
      const [row] = await sql<{ id: string }[]>`
        select app.operator_project_create(app.operator_org_id(${project.org}), app.operator_user_id(${project.createdBy}),
          ${project.name}, ${project.key ?? null}, ${project.description ?? null}, ${project.externalItemId ?? null}) as id`
      for (const grant of project.access) {
        await grantProjectAccess(sql, project.org, project.name, { email: grant.email, team: grant.team }, grant.level)
      }
      result.projects[project.name] = { id: row!.id }
    }
    for (const provider of file.providers) {
      await sql`select app.operator_provider_add(app.operator_org_id(${provider.org}), ${provider.slug}, ${provider.kind},
        ${provider.baseUrl}, ${provider.apiKey ?? null})`
    }
    for (const model of file.models) await addModel(sql, model.org, model)
    for (const secret of file.secrets) {
      await sql`select app.operator_secret_set(app.operator_org_id(${secret.org}), ${secret.name}, ${secret.value})`
    }
    for (const grant of file.grants) {
      await sql`select app.operator_competence_grant(app.operator_org_id(${grant.org}), app.operator_user_id(${grant.email}),
        ${grant.competence}, ${timestamp(grant.expiresAt)})`
    }
    return result
  })
}
