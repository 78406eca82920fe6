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

/**
 * How connections reach the database: `session` (directly, or through a pooler that
 * gives each client a server connection for its whole session) or `transaction` (a
 * pooler such as pgbouncer in pool_mode=transaction, which may hand each transaction
 * to another server connection, and passes no startup options on).
 */
export type PoolMode = 'session' | 'transaction'

/**
 * Named prepared statements live in one server session: behind a transaction pooler
 * the next execution may reach another, where the statement does not exist. Unnamed
 * statements are parsed, bound and executed within one transaction.
 */
const pooling = (mode: PoolMode) => (mode === 'transaction' ? { prepare: false } : {})

export function ownerPool(url: string, max = 4, mode: PoolMode = 'session'): Sql {
  return postgres(url, { ...common, ...pooling(mode), max })
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

/** The role every request runs as, and the plan mode its statements are planned in. */
export const REQUEST_ROLE = 'api'
export const REQUEST_PLAN_CACHE_MODE = 'force_generic_plan'

/**
 * The pool requests run on. databaseUrl is the owner's URL (the request login is
 * derived from it) unless requestUrl names the request login's own.
 * onQuery observes every statement sent (benchmarks count round trips with it).
 */
export function requestPool(databaseUrl: string, max = 10, onQuery?: (query: string) => void, requestUrl?: string,
  mode: PoolMode = 'session'): Sql {
  return postgres(requestDatabaseUrl(databaseUrl, requestUrl), {
    ...common, ...pooling(mode), max,
    // The session role is api before any request runs: the request login's role
    // defaults say so at every login (db/schema/0028_request_login_defaults.sql), and
    // directly the startup packet says it again, for a login an operator made without
    // them. A transaction pooler refuses startup options, so there the defaults alone
    // hold (a process in that mode checks them at start-up: requestLoginProblem).
    // Generic plans: every request statement runs inside functions whose queries differ
    // only in parameters, and re-planning them with their row-level security
    // expansions per call costs more than the queries themselves.
    ...(mode === 'session' ? { connection: { options: `-c role=${REQUEST_ROLE} -c plan_cache_mode=${REQUEST_PLAN_CACHE_MODE}` } } : {}),
    ...(onQuery ? { debug: (_connection: number, query: string) => onQuery(query) } : {}),
  })
}

/**
 * What is wrong with the request login's own defaults, or null: a connection opened
 * with no startup option (as a transaction pooler opens them) must act as
 * REQUEST_ROLE with generic plans, or requests would run as the bare login (which
 * may do nothing) or re-plan every statement.
 */
export async function requestLoginProblem(databaseUrl: string, requestUrl?: string): Promise<string | null> {
  const sql = requestPool(databaseUrl, 1, undefined, requestUrl, 'transaction')
  try {
    const [session] = await sql<{ login: string; acting: string; plans: string }[]>`
      select session_user::text as login, current_user::text as acting, current_setting('plan_cache_mode') as plans`
    const { login, acting, plans } = session!
    if (acting === REQUEST_ROLE && plans === REQUEST_PLAN_CACHE_MODE) return null
    return `the request login ${login} logs in as ${acting} with plan_cache_mode ${plans}, not as ${REQUEST_ROLE} with ` +
      `${REQUEST_PLAN_CACHE_MODE}: give it those role defaults (alter role ${login} set role = '${REQUEST_ROLE}'; ` +
      `alter role ${login} set plan_cache_mode = '${REQUEST_PLAN_CACHE_MODE}')`
  } finally {
    await sql.end({ timeout: 5 })
  }
}
