// /metrics/rag: the indexing service's own Prometheus registry (never prom-client's
// global one). Counters and the histogram count what this process did; the queue
// gauge is read from SQL at every scrape, so it covers every process.
import { Counter, Gauge, Histogram, Registry } from 'prom-client'
import type { Sql } from '../../core/db/connection.ts'

export interface IndexingMetrics {
  registry: Registry
  indexed: Counter<'outcome'>
  uploads: Counter<'mode'>
  searches: Counter
  searchSeconds: Histogram
}

export function createMetrics(sql: Sql): IndexingMetrics {
  const registry = new Registry()
  const indexed = new Counter({
    name: 'rag_documents_indexed_total', help: 'Files this process indexed, by outcome (completed or failed).',
    labelNames: ['outcome'] as const, registers: [registry],
  })
  // Both outcomes appear from the first scrape, at 0.
  indexed.inc({ outcome: 'completed' }, 0)
  indexed.inc({ outcome: 'failed' }, 0)
  const uploads = new Counter({
    name: 'rag_uploads_total', help: 'Uploads accepted, by mode (background or sync).',
    labelNames: ['mode'] as const, registers: [registry],
  })
  uploads.inc({ mode: 'background' }, 0)
  uploads.inc({ mode: 'sync' }, 0)
  const searches = new Counter({ name: 'rag_searches_total', help: 'Searches answered.', registers: [registry] })
  const searchSeconds = new Histogram({
    name: 'rag_search_duration_seconds', help: 'How long searches took, embedding the query included.',
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10], registers: [registry],
  })
  new Gauge({
    name: 'rag_index_queue_depth', help: 'Files waiting to be indexed (queued) or being indexed (running), across every process.',
    labelNames: ['status'] as const, registers: [registry],
    async collect() {
      try {
        const rows = await sql<{ status: string; count: number }[]>`
          select s.status, count(f.file_id)::int as count
            from unnest(array['queued', 'running']) as s (status)
            left join app.index_files f on f.status = s.status
           group by s.status`
        for (const row of rows) this.set({ status: row.status }, row.count)
      } catch {
        // A database that does not answer leaves the gauge out of this scrape.
        this.reset()
      }
    },
  })
  return { registry, indexed, uploads, searches, searchSeconds }
}
