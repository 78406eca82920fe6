// /openapi.json is generated from the route declarations and must be a valid
// OpenAPI document describing every operation; /docs serves a local reference.
import t from 'tap'
import { Validator } from '@seriousme/openapi-schema-validator'
import { startTestService } from '../lib/service.ts'
import { allRoutes } from '../../server/service.ts'
import { loadConfig } from '../../server/core/config.ts'

t.test('the OpenAPI document is valid and describes every route', async (t) => {
  const service = await startTestService(t)
  const res = await service.request('GET', '/openapi.json')
  t.equal(res.status, 200)
  t.equal(res.headers.get('x-service-api-version'), null, 'a keyless schema endpoint carries no version header')
  const document = res.body

  const validator = new Validator()
  const result = await validator.validate(document)
  t.ok(result.valid, `valid OpenAPI: ${JSON.stringify(result.errors ?? []).slice(0, 2000)}`)
  t.equal(document.openapi, '3.1.0')

  const routes = allRoutes(service.db.owner, loadConfig({ DATABASE_URL: service.db.url, LOG_LEVEL: 'silent' }), null)
  for (const route of routes) {
    if (route.undocumented) continue
    const path = route.path.replace(/:([A-Za-z_]+)/g, '{$1}')
    const operation = document.paths[path]?.[route.method.toLowerCase()]
    t.ok(operation, `${route.method} ${route.path} is described`)
    if (!operation) continue
    if (route.family) {
      t.equal(operation['x-tale-pagination'], route.family, `${route.method} ${route.path} marks its list family`)
      const success = operation.responses[String(route.kind === 'operation' && typeof route.status === 'number' ? route.status : 200)]
      t.equal(success['x-tale-pagination'], route.family, 'on the list response too')
    }
    if (route.kind !== 'keyless') {
      for (const code of ['400', '401', '429', '500']) t.ok(operation.responses[code], `${route.path} documents ${code}`)
      if (route.kind === 'handler' || route.auth !== 'session') {
        t.ok(operation.responses['404'], `${route.method} ${route.path} documents 404 (an unknown organization slug)`)
      }
    } else {
      // The metrics paths ask for a bearer of their own instead of an API key.
      t.same(operation.security, route.security === 'metrics' ? [{ metricsBearer: [] }] : [], `${route.path} is keyless`)
      for (const code of ['400', '414']) t.ok(operation.responses[code], `${route.path} documents ${code} (the query check, the URL length)`)
    }
  }

  const list = document.paths['/api/v1/projects'].get
  t.same(list.parameters.filter((p: { in: string }) => p.in === 'query').map((p: { name: string }) => p.name).sort(),
    ['archived', 'cursor', 'externalItemId', 'limit'], 'query parameters come from the declared shape')
  t.equal(list['x-tale-pagination'], 'keyset')
  const create = document.paths['/api/v1/projects'].post
  t.same(Object.keys(create.requestBody.content['application/json'].schema.properties).sort(),
    ['description', 'externalItemId', 'key', 'name'])
  t.equal(create.requestBody.content['application/json'].schema.additionalProperties, false, 'unknown keys are refused')
  t.ok(create.responses['201'].content['application/json'].schema.properties.project, 'the response schema is described')
  t.ok(create.responses['409'], 'coded refusals are documented')
  t.equal(document.paths['/api/v1/teams'].get['x-tale-pagination'], 'unpaginated')
  for (const path of ['/api/v1/runs/{runId}/approvals/{approvalId}', '/api/v1/projects/{id}/runs/{runId}/approvals/{approvalId}']) {
    t.ok(document.paths[path]?.post, `the additive approval route ${path} is documented`)
  }
  t.ok(document.paths['/api/v1/automations/{name}/runs'].post.parameters.some((p: { name: string; in: string }) =>
    p.in === 'header' && p.name === 'idempotency-key'), 'run starts document their Idempotency-Key header')
  t.ok(document.paths['/api/v1/mcp'].post, 'the MCP endpoint is documented')
  const operationIds = Object.values(document.paths).flatMap((item: any) => Object.values(item).map((op: any) => op.operationId))
  t.equal(new Set(operationIds).size, operationIds.length, 'operation ids are unique')
})

t.test('/docs is an interactive reference served from local assets', async (t) => {
  const service = await startTestService(t)
  const page = await service.request('GET', '/docs')
  t.equal(page.status, 200)
  t.match(page.headers.get('content-type'), /text\/html/)
  t.notMatch(page.text, /(src|href)="(https?:)?\/\//, 'no asset is loaded from another host')
  const referenced = [...page.text.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]!)
  t.ok(referenced.length >= 4)
  for (const asset of referenced) {
    const res = await service.request('GET', asset)
    t.equal(res.status, 200, `${asset} is served`)
    t.ok(res.text.length > 0)
  }
  const init = await service.request('GET', '/docs/init.js')
  t.match(init.text, /url: '\/openapi\.json'/, 'the reference reads this instance\'s document')
  t.match(init.text, /validatorUrl: null/, 'and calls no outside validator')
  t.equal((await service.request('GET', '/docs/assets/package.json')).status, 404, 'only the listed assets are served')
  t.equal((await service.request('GET', '/docs/assets/..%2Fpackage.json')).status, 404)
})
