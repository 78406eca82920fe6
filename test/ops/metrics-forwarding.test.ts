// /metrics/rag and /metrics/crawler on the API: read from the indexing service and the
// crawler with the metrics token, 503 METRICS_SOURCE_UNAVAILABLE when they do not answer.
import t from 'tap'
import { startTestService } from '../lib/service.ts'
import { refused } from '../lib/assert.ts'
import { freshDatabase } from '../lib/db.ts'
import { value } from '../lib/prometheus.ts'
import { METRICS_TOKEN as TOKEN, bearer, scrape } from '../lib/metrics.ts'
import { startIndexing } from '../indexing/indexing-service.ts'
import { loadConfig } from '../../server/core/config.ts'
import { createLogger } from '../../server/core/log.ts'
import { startCrawlerService } from '../../server/services/crawler/service.ts'

t.test('/metrics/rag and /metrics/crawler are read from their services, and answer 503 when one is down', async (t) => {
  const db = await freshDatabase()
  t.teardown(() => db.drop())
  const indexing = await startIndexing(t, db.url, { METRICS_BEARER_TOKEN: TOKEN }, false)
  const crawlerConfig = loadConfig({ DATABASE_URL: db.url, LOG_LEVEL: 'silent', CRAWLER_PORT: '0', METRICS_BEARER_TOKEN: TOKEN })
  const crawler = await startCrawlerService(crawlerConfig, db.url, { log: createLogger('silent'), port: 0, runner: false })
  let crawlerClosed = false
  t.teardown(async () => { if (!crawlerClosed) await crawler.close() })
  const service = await startTestService(t, { METRICS_BEARER_TOKEN: TOKEN, INDEXING_URL: indexing.url, CRAWLER_URL: crawler.url })

  t.test('the services themselves ask for the token on every /metrics/ path', async (t) => {
    for (const url of [indexing.url, crawler.url]) {
      const other = await fetch(`${url}/metrics/other`)
      t.equal(other.status, 401, `${url}/metrics/other without the token`)
      t.equal((await other.json() as { code: string }).code, 'UNAUTHORIZED')
      t.equal((await fetch(`${url}/metrics/other`, { headers: bearer(TOKEN) })).status, 404, 'with it, nothing there')
    }
  })

  t.test('forwarded with the token', async (t) => {
    const rag = await scrape(t, service, '/metrics/rag')
    t.equal(rag.get('rag_documents_indexed_total')?.type, 'counter', 'the indexing service\'s families')
    t.equal(value(rag, 'rag_documents_indexed_total', { outcome: 'completed' }), 0)
    const crawl = await scrape(t, service, '/metrics/crawler')
    t.equal(crawl.get('crawler_url_fetches_total')?.type, 'counter', 'the crawler\'s families')
    t.equal(value(crawl, 'crawler_scans_total'), 0)
    refused(t, await service.request('GET', '/metrics/rag'), 401, 'UNAUTHORIZED', 'the API asks for the token first')
  })

  t.test('a service that is down answers 503 METRICS_SOURCE_UNAVAILABLE', async (t) => {
    await indexing.close()
    crawlerClosed = true
    await crawler.close()
    const rag = refused(t, await service.request('GET', '/metrics/rag', { headers: bearer(TOKEN) }), 503, 'METRICS_SOURCE_UNAVAILABLE')
    t.equal(rag.data.source, 'rag')
    const crawl = refused(t, await service.request('GET', '/metrics/crawler', { headers: bearer(TOKEN) }), 503, 'METRICS_SOURCE_UNAVAILABLE')
    t.equal(crawl.data.source, 'crawler')
    await scrape(t, service, '/metrics/platform')
  })
})

t.test('a service that refuses the API\'s token is unavailable too, and says what it answered', async (t) => {
  const db = await freshDatabase()
  t.teardown(() => db.drop())
  const indexing = await startIndexing(t, db.url, { METRICS_BEARER_TOKEN: `${TOKEN}-other` }, false)
  const service = await startTestService(t, { METRICS_BEARER_TOKEN: TOKEN, INDEXING_URL: indexing.url })
  const res = refused(t, await service.request('GET', '/metrics/rag', { headers: bearer(TOKEN) }), 503, 'METRICS_SOURCE_UNAVAILABLE')
  t.same(res.data, { source: 'rag', status: 401 })
})
