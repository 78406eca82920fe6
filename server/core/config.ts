// Every environment variable the service reads, validated in one place. Unknown or
// malformed values stop start-up with a message naming them.
import { availableParallelism } from 'node:os'
import * as v from 'valibot'
import type { ObjectStoreSettings } from './storage/object-store.ts'
import { parseSealingKey } from './sealed.ts'
import { CRAWLER_DEFAULTS } from './crawl/settings.ts'
import { parseAllowlist } from './web/guard.ts'

const port = v.pipe(v.string(), v.regex(/^\d{1,5}$/, 'must be a port number'), v.transform(Number),
  v.number(), v.minValue(0), v.maxValue(65535))
const url = v.pipe(v.string(), v.url('must be a URL'))
const replicas = v.pipe(v.string(), v.regex(/^\d+$/, 'must be a whole number from 1 to 16'), v.transform(Number),
  v.number(), v.minValue(1, 'must be a whole number from 1 to 16'), v.maxValue(16, 'must be a whole number from 1 to 16'))
const bool = v.pipe(v.picklist(['true', 'false', '1', '0']), v.transform((s) => s === 'true' || s === '1'))

const schema = v.object({
  DATABASE_URL: v.optional(v.pipe(v.string(), v.regex(/^postgres(ql)?:\/\//, 'must be a postgres:// URL'))),
  // Where request connections log in: a role that is a member of api and of nothing
  // the owner can do. Unset, DATABASE_URL with its user replaced by api_login (same
  // password), which the migrations create (server/core/db/connection.ts).
  DATABASE_REQUEST_URL: v.optional(v.pipe(v.string(), v.regex(/^postgres(ql)?:\/\//, 'must be a postgres:// URL'))),
  // transaction: the processes reach the database through a pooler that lends a
  // server connection per transaction (pgbouncer's pool_mode=transaction), so no
  // statement may rest on session state: no prepared statements, no startup options,
  // and no migrations (they hold a session-level lock). See docs/operations.md.
  DATABASE_POOL_MODE: v.optional(v.picklist(['session', 'transaction']), 'session'),
  PORT: v.optional(port, '3000'),
  PUBLIC_BASE_URL: v.optional(url),
  // `none` opts out of object storage: uploads answer 503 OBJECT_STORE_UNCONFIGURED.
  S3_ENDPOINT: v.optional(v.union([v.literal('none'), url], 'must be a URL or none')),
  // The store's address as clients reach it, when it differs from the service's
  // (compose: http://minio:9000 inside, http://localhost:9000 outside).
  S3_PUBLIC_ENDPOINT: v.optional(url),
  S3_BUCKET: v.optional(v.pipe(v.string(), v.minLength(3))),
  S3_REGION: v.optional(v.string(), 'us-east-1'),
  S3_ACCESS_KEY_ID: v.optional(v.string()),
  S3_SECRET_ACCESS_KEY: v.optional(v.string()),
  S3_FORCE_PATH_STYLE: v.optional(bool, 'true'),
  METRICS_BEARER_TOKEN: v.optional(v.pipe(v.string(), v.minLength(16, 'must be at least 16 characters'))),
  INDEXING_PORT: v.optional(port, '8001'),
  // The bearer token the indexing service asks of every caller but its health and
  // reference routes; unset, the service is open and its port must stay internal.
  INDEXING_TOKEN: v.optional(v.pipe(v.string(), v.minLength(16, 'must be at least 16 characters'))),
  // Files the indexing service's own job runner indexes at once.
  INDEXING_CONCURRENCY: v.optional(v.pipe(v.string(), v.regex(/^\d+$/, 'must be a whole number'), v.transform(Number),
    v.number(), v.minValue(1), v.maxValue(32)), '2'),
  // The embedder of the indexing service's own uploads (which belong to no
  // organization): an OpenAI-compatible embeddings endpoint. Unset, they are ranked
  // by full text and trigrams.
  INDEXING_EMBEDDINGS_URL: v.optional(url),
  INDEXING_EMBEDDINGS_MODEL: v.optional(v.pipe(v.string(), v.minLength(1))),
  INDEXING_EMBEDDINGS_API_KEY: v.optional(v.string()),
  CRAWLER_PORT: v.optional(port, '8002'),
  // Where the API reads the internal services' /metrics/rag and /metrics/crawler to
  // serve them on its own port; unset, http://localhost:INDEXING_PORT and :CRAWLER_PORT.
  INDEXING_URL: v.optional(url),
  CRAWLER_URL: v.optional(url),
  // The crawler's bearer token, as INDEXING_TOKEN is the indexing service's.
  CRAWLER_TOKEN: v.optional(v.pipe(v.string(), v.minLength(16, 'must be at least 16 characters'))),
  // Politeness toward one host: requests in flight at once, and the least gap between
  // two (a robots.txt Crawl-delay raises it, up to 60 s).
  CRAWLER_HOST_CONCURRENCY: v.optional(v.pipe(v.string(), v.regex(/^\d+$/, 'must be a whole number'), v.transform(Number),
    v.number(), v.minValue(1), v.maxValue(16)), String(CRAWLER_DEFAULTS.hostConcurrency)),
  CRAWLER_DELAY_MS: v.optional(v.pipe(v.string(), v.regex(/^\d+$/, 'must be a whole number of milliseconds'), v.transform(Number),
    v.number(), v.maxValue(60_000)), String(CRAWLER_DEFAULTS.delayMs)),
  // Networks the crawler may reach although they are private or loopback (comma-separated
  // addresses or CIDRs, e.g. 10.1.0.0/16): unset, only public addresses are crawled.
  CRAWLER_ALLOWED_NETWORKS: v.optional(v.string()),
  // A page with fewer words of readable text is kept as skipped (below_word_count).
  CRAWLER_WORD_COUNT_THRESHOLD: v.optional(v.pipe(v.string(), v.regex(/^\d+$/, 'must be a whole number'), v.transform(Number),
    v.number()), String(CRAWLER_DEFAULTS.wordCountThreshold)),
  CRAWLER_USER_AGENT: v.optional(v.pipe(v.string(), v.minLength(1), v.maxLength(200)), CRAWLER_DEFAULTS.userAgent),
  // Reverse proxies in front of the API (addresses or CIDRs, comma-separated): from
  // these peers the client's address is read from X-Forwarded-For, for the budgets
  // keyed by address. Unset, the socket's peer is the client.
  TRUSTED_PROXIES: v.optional(v.pipe(v.string(), v.check((value) => {
    try { parseAllowlist(value); return true } catch { return false }
  }, 'must be comma-separated IP addresses or CIDR ranges (such as 10.0.0.0/8)'))),
  LOG_LEVEL: v.optional(v.picklist(['debug', 'info', 'warn', 'error', 'silent']), 'info'),
  // Scales every rate budget (benchmarks raise it; 1 is the documented budget).
  RATE_LIMIT_SCALE: v.optional(v.pipe(v.string(), v.regex(/^\d+(\.\d+)?$/, 'must be a positive number'),
    v.transform(Number), v.number(), v.minValue(0.001)), '1'),
  // Headers plus body must arrive within this many milliseconds (the spec's 15 minutes).
  REQUEST_TIMEOUT_MS: v.optional(v.pipe(v.string(), v.regex(/^\d+$/, 'must be milliseconds'), v.transform(Number),
    v.number(), v.minValue(100)), '900000'),
  // Connections of the request pool; requests wait for one beyond it. Measured in
  // BENCHMARKS.md: about two per core serves best, more mostly adds contention.
  DATABASE_POOL_SIZE: v.optional(v.pipe(v.string(), v.regex(/^\d+$/, 'must be a whole number'), v.transform(Number),
    v.number(), v.minValue(1), v.maxValue(200)), String(Math.max(4, availableParallelism() * 2))),
  // How many API and worker processes the deployment runs side by side (docker-compose.yml
  // scales the api and worker services by them and hands them to every process, so a
  // count outside the spec's 1 to 16 stops the stack with this message, not a surprise).
  API_REPLICAS: v.optional(replicas),
  WORKER_REPLICAS: v.optional(replicas),
  // Jobs one worker process runs at once (runs, purges, indexing); measured in BENCHMARKS.md.
  WORKER_CONCURRENCY: v.optional(v.pipe(v.string(), v.regex(/^\d+$/, 'must be a whole number'), v.transform(Number),
    v.number(), v.minValue(1), v.maxValue(100)), '8'),
  // How long a model provider may stay silent (before its first part or between parts)
  // before a chat turn or an agent's call fails with timeout.
  MODEL_TIMEOUT_MS: v.optional(v.pipe(v.string(), v.regex(/^\d+$/, 'must be milliseconds'), v.transform(Number),
    v.number(), v.minValue(100)), '60000'),
  // Port of the embedded PostgreSQL that runs when DATABASE_URL is unset.
  EMBEDDED_PG_PORT: v.optional(port, '54329'),
  // 32 bytes, base64: the AES-256-GCM key browser sessions are sealed with before they
  // are stored (server/core/sealed.ts). Unset, importing one answers 503.
  BROWSER_SESSION_KEY: v.optional(v.pipe(v.string(),
    v.check((value) => parseSealingKey(value) !== null, 'must be 32 bytes in base64 (44 characters, e.g. openssl rand -base64 32)'))),
})

export type Config = v.InferOutput<typeof schema> & { publicBaseUrl: string }

// Variables of this service share these prefixes; any other variable is the
// environment's business, but a misspelt one of ours is caught here.
const ownPrefixes = ['DATABASE_', 'S3_', 'PUBLIC_BASE', 'METRICS_', 'INDEXING_', 'CRAWLER_', 'RATE_LIMIT', 'EMBEDDED_PG', 'REQUEST_TIMEOUT', 'WORKER_', 'MODEL_', 'BROWSER_SESSION',
  // Only this name of the API_ family: other API_ variables belong to the environment.
  'API_REPLICA']

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const known = new Set(Object.keys(schema.entries))
  const unknown = Object.keys(env).filter((name) => ownPrefixes.some((p) => name.startsWith(p)) && !known.has(name))
  const picked: Record<string, string> = {}
  for (const name of known) {
    const value = env[name]
    if (value !== undefined && value !== '') picked[name] = value
  }
  const result = v.safeParse(schema, picked)
  const problems = unknown.map((name) => `${name}: unknown setting`)
  if (!result.success) {
    for (const issue of result.issues) problems.push(`${v.getDotPath(issue) ?? '?'}: ${issue.message}`)
  }
  if (result.success && result.output.S3_ENDPOINT && result.output.S3_ENDPOINT !== 'none' && !result.output.S3_BUCKET) {
    problems.push('S3_BUCKET: required when S3_ENDPOINT is set')
  }
  if (problems.length > 0 || !result.success) {
    throw new ConfigError(problems)
  }
  const config = result.output
  return { ...config, publicBaseUrl: config.PUBLIC_BASE_URL ?? `http://localhost:${config.PORT}` }
}

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n  ${problems.join('\n  ')}`)
  }
}

/** The configured object store's settings; null when there is none to connect to. */
export function objectStoreSettings(config: Config): ObjectStoreSettings | null {
  if (!config.S3_ENDPOINT || config.S3_ENDPOINT === 'none' || !config.S3_BUCKET) return null
  return {
    endpoint: config.S3_ENDPOINT, publicEndpoint: config.S3_PUBLIC_ENDPOINT, bucket: config.S3_BUCKET, region: config.S3_REGION, forcePathStyle: config.S3_FORCE_PATH_STYLE,
    accessKeyId: config.S3_ACCESS_KEY_ID, secretAccessKey: config.S3_SECRET_ACCESS_KEY,
  }
}
