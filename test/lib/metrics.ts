// Scraping the service's /metrics/* paths in tests, with the token they are started with.
import type { Test } from 'tap'
import type { TestService } from './service.ts'
import { eventually } from './wait.ts'
import { parseExposition, type Exposition } from './prometheus.ts'

export const METRICS_TOKEN = 'metrics-token-0123456789abcdef'
export const METRICS_PATHS = ['/metrics/platform', '/metrics/store', '/metrics/rag', '/metrics/crawler']
export const bearer = (token: string) => ({ authorization: `Bearer ${token}` })

/** One scrape with METRICS_TOKEN: a 200 in the Prometheus text format, parsed. */
export async function scrape(t: Test, service: TestService, path: string): Promise<Exposition> {
  const res = await service.request('GET', path, { headers: bearer(METRICS_TOKEN) })
  t.equal(res.status, 200, `${path} answers with the token`)
  t.match(res.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/, `${path} is the Prometheus text format`)
  return parseExposition(res.text)
}

/** Scrapes until the exposition shows what is awaited (a request is counted once its answer is sent). */
export const scrapeUntil = (t: Test, service: TestService, path: string, done: (exposition: Exposition) => boolean) =>
  eventually(() => scrape(t, service, path), done)
