// The service assembled: the request pool, the routes, the HTTP server.
import type { AddressInfo } from 'node:net'
import { createApp, API_VERSION } from './app.ts'
import type { Config } from './core/config.ts'
import { ownerPool, requestPool } from './core/db/connection.ts'
import { createLogger, type Logger } from './core/log.ts'
import { healthRoutes } from './routes/health.ts'
import { identityRoutes } from './routes/identity.ts'
import { projectRoutes } from './routes/projects.ts'
import { folderRoutes } from './routes/folders.ts'
import { fileRoutes } from './routes/files.ts'
import { documentRoutes } from './routes/documents.ts'
import { knowledgeRoutes } from './routes/knowledge.ts'
import { websiteRoutes } from './routes/websites.ts'
import { contactRoutes } from './routes/contacts.ts'
import { productRoutes } from './routes/products.ts'
import { skillRoutes } from './routes/skills.ts'
import { browserSessionRoutes } from './routes/browser-sessions.ts'
import { automationRoutes } from './routes/automations.ts'
import { runRoutes } from './routes/runs.ts'
import { triggerRoutes } from './routes/triggers.ts'
import { webhookRoutes } from './routes/webhooks.ts'
import { taskRoutes } from './routes/tasks.ts'
import { agentRoutes } from './routes/agents.ts'
import { notificationRoutes } from './routes/notifications.ts'
import { threadRoutes } from './routes/threads.ts'
import { governanceRoutes } from './routes/governance.ts'
import { rateBudgets } from './auth/rate-budgets.ts'
import { mcpRoutes } from './mcp/route.ts'
import type { ObjectStore } from './core/storage/object-store.ts'
import type { Route } from './routes/route.ts'
import { documentationRoutes } from './openapi/routes.ts'
import { signInRoutes } from './app/sign-in.ts'
import { settingsRoutes } from './app/settings.ts'
import { competenceRoutes } from './app/competences.ts'
import { identityClientPages } from './app/identity-clients.ts'
import { identityClientRoutes } from './routes/identity-clients.ts'
import { createIssuer, type Issuer } from './oidc/issuer.ts'
import { interactionRoutes } from './oidc/interaction.ts'
import { queryEmbedder, type QueryEmbedder } from './core/indexing/query-embedder.ts'
import { createApiMetrics, emptyMetricsSource, metricsServices, type ApiMetrics } from './metrics/api-metrics.ts'
import { metricsRoutes } from './metrics/routes.ts'
import { requestObserver } from './metrics/observe.ts'
import { drainer } from './core/http-drain.ts'

export interface RunningService {
  url: string
  port: number
  close: () => Promise<void>
}

/** metrics: the process's registries; without them (a listing of the routes) the metrics paths report nothing. */
export function allRoutes(requests: Parameters<typeof healthRoutes>[0], config: Config, store: ObjectStore | null, issuer?: Issuer,
  embedder: QueryEmbedder | null = null, metrics?: ApiMetrics): Route[] {
  const routes: Route[] = [
    ...healthRoutes(requests, API_VERSION), ...identityRoutes, ...projectRoutes, ...folderRoutes(store), ...fileRoutes(store),
    ...documentRoutes(store), ...knowledgeRoutes(embedder), ...websiteRoutes(embedder),
    ...contactRoutes, ...productRoutes,
    ...skillRoutes, ...browserSessionRoutes(config.BROWSER_SESSION_KEY),
    ...automationRoutes, ...triggerRoutes, ...runRoutes, ...taskRoutes, ...agentRoutes, ...notificationRoutes, ...threadRoutes, ...mcpRoutes(API_VERSION),
    ...webhookRoutes(requests, rateBudgets(config.RATE_LIMIT_SCALE), metrics?.platform.webhookAccepted),
    ...metricsRoutes({ token: config.METRICS_BEARER_TOKEN, platform: metrics?.platform ?? emptyMetricsSource(),
      store: metrics?.store ?? emptyMetricsSource(), services: metricsServices(config) }),
    ...signInRoutes(requests, config), ...settingsRoutes(requests, config), ...competenceRoutes(requests, config),
    ...identityClientPages(requests, config),
    ...governanceRoutes,
    ...identityClientRoutes, ...(issuer ? interactionRoutes(issuer, requests, config) : []),
  ]
  routes.push(...documentationRoutes(() => routes, { version: API_VERSION }))
  return routes
}

export interface ServiceOptions {
  port?: number
  log?: Logger
  onQuery?: (query: string) => void
  /** The object store of project files; null for a deployment without one. */
  objectStore?: ObjectStore | null
}

export async function startService(config: Config, databaseUrl: string, options: ServiceOptions = {}): Promise<RunningService> {
  const log = options.log ?? createLogger(config.LOG_LEVEL)
  const requests = requestPool(databaseUrl, config.DATABASE_POOL_SIZE, options.onQuery, config.DATABASE_REQUEST_URL, config.DATABASE_POOL_MODE)
  // The identity issuer is mounted at /api/auth; its interaction pages are routes of the app.
  const issuer = createIssuer(requests, log)
  // Provider keys are read on an owner connection of its own, never by the request
  // role: one connection, opened on the first search that needs a query vector.
  const secrets = ownerPool(databaseUrl, 1, config.DATABASE_POOL_MODE)
  const embedder = queryEmbedder(async (text, params) => await secrets.unsafe(text, params as never[]) as never,
    { warn: log.warn })
  // The metrics read the job queue and the statistics views on an owner connection of
  // their own, opened at the first scrape.
  const scrapes = ownerPool(databaseUrl, 1)
  const metrics = createApiMetrics(scrapes)
  const routes = allRoutes(requests, config, options.objectStore ?? null, issuer, embedder, metrics)
  const server = createApp({ config, requests, routes, log, mounts: [issuer], observe: requestObserver(metrics.platform, routes) })
  const drain = drainer(server)
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(options.port ?? config.PORT, '0.0.0.0', () => resolve())
  })
  const port = (server.address() as AddressInfo).port
  // Unset, the public address is this process's own, with the port it actually got.
  issuer.listening(config.PUBLIC_BASE_URL ?? `http://localhost:${port}`)
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    close: async () => {
      // Requests already accepted are answered before the pools they use close.
      await drain()
      await requests.end({ timeout: 5 })
      await secrets.end({ timeout: 5 })
      await scrapes.end({ timeout: 5 })
    },
  }
}
