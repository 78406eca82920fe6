// The API process's metrics: its platform registry, the backend store's, and the
// routes that serve them beside the internal services' forwarded ones.
import { Registry } from 'prom-client'
import type { Config } from '../core/config.ts'
import type { Sql } from '../core/db/connection.ts'
import { createPlatformMetrics, type PlatformMetrics } from './platform.ts'
import { createStoreMetrics } from './store.ts'
import type { MetricsRoutesOptions, MetricsSource } from './routes.ts'

export interface ApiMetrics {
  platform: PlatformMetrics
  store: MetricsSource
}

/** owner: the owner's connection, which reads the job queue and the statistics views at scrape time. */
export function createApiMetrics(owner: Sql): ApiMetrics {
  return { platform: createPlatformMetrics(owner), store: createStoreMetrics(owner) }
}

/** Where the API reads the internal services' metrics: INDEXING_URL and CRAWLER_URL, else their ports on this host. */
export function metricsServices(config: Config): MetricsRoutesOptions['services'] {
  return {
    rag: config.INDEXING_URL ?? `http://localhost:${config.INDEXING_PORT}`,
    crawler: config.CRAWLER_URL ?? `http://localhost:${config.CRAWLER_PORT}`,
  }
}

/** Sources with nothing to report, for a listing of the routes that serves no scrape (the OpenAPI document's tests). */
export function emptyMetricsSource(): MetricsSource {
  return { registry: new Registry(), refresh: async () => {} }
}
