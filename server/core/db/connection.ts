// Two kinds of connection to one database: the owner's (migrations, the admin CLI,
// the worker) and the request pool, which logs in as a role that can be `api` and
// nothing else, so every request is held to row-level security and no statement on
// it can become the owner.
import postgres from 'postgres'

export type Sql = postgres.Sql

/**
 * The login role of request connections (created by the migrations, see
 * db/schema/0011_limits_logins_privileges.sql): a member of `api` with no privilege
 * of its own, so RESET ROLE leaves a request connection powerless and SET ROLE to
 * the owner is refused. Named after the role it exists to become.
 */
export const REQUEST_LOGIN = 'api_login'

const common = {
  onnotice: () => {},
  // Timestamps travel as epoch ms built in SQL; bigint columns as strings.
  types: {},
} satisfies postgres.Options<Record<string, never>>

export function ownerPool(url: string, max = 4): Sql {
  return postgres(url, { ...common, max })
}

/**
 * Where request connections log in: DATABASE_REQUEST_URL when the operator gives
 * one; otherwise the owner's URL (DATABASE_URL, or the embedded database's) with
 * REQUEST_LOGIN as its user and the same password. Under trust authentication the
 * password is not asked for; with password authentication the migrator gives
 * REQUEST_LOGIN the owner's password when it has none (server/core/db/migrate.ts).
 * An owner URL with no host (a Unix socket given as a parameter) cannot be
 * rewritten: such a deployment names its request URL.
 */
export function requestDatabaseUrl(ownerUrl: string, configured?: string): string {
  if (configured) return configured
  const url = new URL(ownerUrl)
  url.username = REQUEST_LOGIN
  return url.toString()
}

/**
 * The pool requests run on. databaseUrl is the owner's URL (the request login is
 * derived from it) unless requestUrl names the request login's own.
 * onQuery observes every statement sent (benchmarks count round trips with it).
 */
export function requestPool(databaseUrl: string, max = 10, onQuery?: (query: string) => void, requestUrl?: string): Sql {
  // The startup packet sets the session role; no request can run before it holds.
  // Generic plans: every request statement runs inside functions whose queries differ
  // only in parameters, and re-planning them with their row-level security
  // expansions per call costs more than the queries themselves.
  return postgres(requestDatabaseUrl(databaseUrl, requestUrl), {
    ...common, max,
    connection: { options: '-c role=api -c plan_cache_mode=force_generic_plan' },
    ...(onQuery ? { debug: (_connection: number, query: string) => onQuery(query) } : {}),
  })
}
