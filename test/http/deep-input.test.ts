// Bodies nested beyond MAX_BODY_DEPTH are refused with INVALID_BODY on every route
// that reads a JSON body, before anything serializes them; bodies within it go
// through. (Webhook URLs read raw bytes: test/triggers/webhooks.test.ts.)
import t from 'tap'
import { randomUUID } from 'node:crypto'
import { allRoutes } from '../../server/service.ts'
import { loadConfig } from '../../server/core/config.ts'
import { MAX_BODY_DEPTH } from '../../server/transport/json-body.ts'
import { check } from '../../server/transport/validation.ts'
import type { Route } from '../../server/routes/route.ts'
import { automationWorld, deploy } from '../lib/automations.ts'
import { refused } from '../lib/assert.ts'
import { signIn } from '../lib/session.ts'

/** An array nested `levels` deep: [[[...]]]. */
const nested = (levels: number) => '['.repeat(levels) + ']'.repeat(levels)
/** A run start body whose input holds values nested so that the body is `levels` deep. */
const startBody = (levels: number) => `{"input":{"deep":${nested(levels - 2)}}}`

// Path parameters the route accepts, so the request reaches its body.
function pathOf(route: Route): string {
  const names = [...route.path.matchAll(/:([A-Za-z_]+)/g)].map((match) => match[1]!)
  const values: Record<string, string> = Object.fromEntries(names.map((name) => [name, 'x']))
  for (const name of names) {
    values[name] = [randomUUID(), 'deep'].find((value) => {
      const checked = check(route.params!, { ...values, [name]: value })
      return checked.ok || !checked.issues.some((issue) => issue.path === name)
    }) ?? 'x'
  }
  return route.path.replace(/:([A-Za-z_]+)/g, (_, name: string) => values[name]!)
}

t.test('a body nested too deep is INVALID_BODY on every route that reads one', async (t) => {
  const w = await automationWorld(t, { worker: false, env: { RATE_LIMIT_SCALE: '1000' } })
  const { service, olive } = w
  // The app's session routes take a signed-in person, the service's Origin and ?orgId=.
  const person = await signIn(w, 'olive@acme.test')
  const orgId = w.seeded.organizations.acme!.id
  const routes = allRoutes(null as never, loadConfig({ DATABASE_URL: 'postgres://unused', PORT: '0' }), null)
    // Webhook URLs take any bytes as the payload (deep JSON is kept as text there).
    .filter((route) => route.method !== 'GET' && !(route.kind === 'keyless' && route.rawBody))
  t.ok(routes.some((route) => route.path === '/api/v1/mcp'), 'the routes include MCP')
  t.ok(routes.some((route) => route.path.endsWith('/asks/:askId')), 'the routes include answering an ask')
  for (const route of routes) {
    const path = pathOf(route)
    for (const levels of [MAX_BODY_DEPTH + 1, 5000]) {
      const res = route.kind === 'operation' && route.auth === 'session'
        ? await service.request(route.method, `${path}?orgId=${orgId}`, { rawBody: nested(levels), headers: { cookie: person.cookie, origin: service.url } })
        : await service.request(route.method, path, { key: olive.key, rawBody: nested(levels) })
      refused(t, res, 400, 'INVALID_BODY', `${route.method} ${route.path} at ${levels} levels`)
      t.match(res.body?.data?.issues?.[0]?.message, /nested deeper than/, 'the issue says why')
    }
  }
})

t.test('a run input within the depth is accepted, one level more is refused', async (t) => {
  const { service, olive, dev } = await automationWorld(t, { worker: false })
  await deploy(await dev.mcp(), {
    name: 'ops/deep',
    steps: [{ slug: 'end', type: 'output', config: { mapping: { deep: '{{ input.deep }}' } } }],
  })
  const within = await olive.post('/api/v1/automations/ops__deep/runs', JSON.parse(startBody(MAX_BODY_DEPTH)))
  t.equal(within.status, 202, `a body ${MAX_BODY_DEPTH} levels deep starts a run`)
  const beyond = await olive.post('/api/v1/automations/ops__deep/runs', JSON.parse(startBody(MAX_BODY_DEPTH + 1)))
  refused(t, beyond, 400, 'INVALID_BODY', `a body ${MAX_BODY_DEPTH + 1} levels deep`)
  t.equal(beyond.body.data.issues[0].path, `input.deep${'.0'.repeat(MAX_BODY_DEPTH - 2)}`, 'the issue has the path of the level too deep')
  const far = await service.request('POST', '/api/v1/automations/ops__deep/runs', { key: olive.key, rawBody: startBody(5000) })
  refused(t, far, 400, 'INVALID_BODY', 'a body 5000 levels deep')
})
