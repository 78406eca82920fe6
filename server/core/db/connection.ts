// Two kinds of connection to one database: the owner's (migrations, the admin CLI,
// the worker) and the request pool, whose sessions run as the `api` role so every
// request is held to row-level security.
import postgres from 'postgres'

export type Sql = postgres.Sql

const common = {
  onnotice: () => {},
  // Timestamps travel as epoch ms built in SQL; bigint columns as strings.
  types: {},
} satisfies postgres.Options<Record<string, never>>

export function ownerPool(url: string, max = 4): Sql {
  return postgres(url, { ...common, max })
}

/** onQuery observes every statement sent (benchmarks count round trips with it). */
export function requestPool(url: string, max = 10, onQuery?: (query: string) => void): Sql {
  // The startup packet sets the session role; no request can run before it holds.
  // Generic plans: every request statement runs inside functions whose queries differ
  // only in parameters, and re-planning them with their row-level security
  // expansions per call costs more than the queries themselves.
  return postgres(url, {
    ...common, max,
    connection: { options: '-c role=api -c plan_cache_mode=force_generic_plan' },
    ...(onQuery ? { debug: (_connection: number, query: string) => onQuery(query) } : {}),
  })
}
