// What an operator reads when the database refuses a command: the rule in words,
// never a constraint's or an index's name.
import postgres from 'postgres'

export const ROLES = ['owner', 'admin', 'developer', 'editor', 'member'] as const
export const LEVELS = ['read', 'edit'] as const

const byConstraint: Record<string, string> = {
  organizations_slug_check: 'slug must be 1 to 64 lowercase letters, digits and inner hyphens',
  organizations_slug_key: 'an organization with this slug already exists',
  organizations_name_check: 'name must not be empty',
  organizations_upload_max_bytes_check: 'max-bytes must be at least 1',
  organizations_upload_extensions_check: 'extensions must name at least one extension',
  users_email_check: 'email must be an email address',
  users_email_key: 'a user with this email already exists',
  memberships_role_check: `role must be one of ${ROLES.join(', ')}`,
  teams_name_check: 'a team name must not be empty',
  teams_name_key: 'a team with this name already exists in the organization',
  api_keys_name_check: 'a key name must not be empty',
  projects_name_check: 'a project name must not be empty or start or end with spaces',
  projects_key_check: 'a project key is an uppercase letter followed by 1 to 5 uppercase letters or digits',
  projects_key_key: 'a project with this key already exists in the organization',
  projects_external_item_id_key: 'a project with this external item id already exists in the organization',
  project_access_level_check: `level must be one of ${LEVELS.join(', ')}`,
  project_access_check: 'give exactly one of --email and --team',
  competence_grants_competence_check: 'competence must be one of notifications.export, skills.publish, rest.act-as',
  model_providers_slug_check: 'a provider slug is lowercase letters, digits and hyphens, and "local" is reserved',
  model_providers_pkey: 'a provider with this slug already exists in the organization',
  models_id_check: 'a model id must not be empty',
  models_context_window_check: 'context-window must be positive',
  models_max_output_tokens_check: 'max-output-tokens must be positive',
  models_pkey: 'this model already exists in the organization',
  models_one_default: 'the organization already has a default model',
  secrets_name_check: 'a secret name is letters, digits and underscores, not starting with a digit',
}

const byCode: Record<string, (table: string) => string> = {
  '23505': (table) => `this ${table} already exists`,
  '23514': (table) => `a value is not accepted for this ${table}`,
  '23503': (table) => `this ${table} refers to something that does not exist`,
  '23P01': (table) => `this ${table} conflicts with an existing one`,
}

/** Words for a database refusal; null when error is not one. */
export function describeDatabaseError(error: unknown): string | null {
  if (!(error instanceof postgres.PostgresError)) return null
  const known = error.constraint_name ? byConstraint[error.constraint_name] : undefined
  if (known) return known
  const table = (error.table_name ?? 'row').replace(/_/g, ' ').replace(/s$/, '')
  if (error.code === '23502') return `${(error.column_name ?? 'a value').replace(/_/g, ' ')} is required`
  const generic = byCode[error.code]
  if (generic) return generic(table)
  // Anything else (a raised exception, a malformed uuid) already speaks in words,
  // except that PostgreSQL may name the constraint or index involved.
  return error.message.replace(/\s*(?:for|on)?\s*(?:constraint|index)\s+"[^"]+"/g, '')
}
