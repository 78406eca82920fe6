// What /openapi.json publishes beyond its validity: the facts a generated client and
// the interactive reference depend on.
import t, { type Test } from 'tap'
import { readdir, readFile } from 'node:fs/promises'
import path from 'node:path'
import { startTestService } from '../lib/service.ts'

type Json = Record<string, any>

async function served(t: Test): Promise<Json> {
  const service = await startTestService(t)
  return (await service.request('GET', '/openapi.json')).body
}

const operations = (document: Json) => Object.entries<Json>(document.paths)
  .flatMap(([route, item]) => Object.entries<Json>(item).map(([method, operation]) => ({ route, method, operation })))

t.test('servers is relative, so the reference calls whichever origin served it', async (t) => {
  const document = await served(t)
  t.same(document.servers, [{ url: '/' }])
})

t.test('the reference\'s own script and assets are not operations of the API', async (t) => {
  const document = await served(t)
  t.same(Object.keys(document.paths).filter((route) => route.startsWith('/docs/')), [])
})

t.test('every operation has an operationId, unique in the document', async (t) => {
  const ids = operations(await served(t)).map(({ route, method, operation }) => {
    t.type(operation.operationId, 'string', `${method} ${route} has an operationId`)
    return operation.operationId
  })
  t.same(ids.filter((id, at) => ids.indexOf(id) !== at), [], 'no operationId is used twice')
})

t.test('limit query parameters are integers, not patterned strings', async (t) => {
  const limits = operations(await served(t)).flatMap(({ route, method, operation }) =>
    (operation.parameters as Json[]).filter((p) => p.in === 'query' && p.name === 'limit').map((p) => ({ at: `${method} ${route}`, schema: p.schema })))
  t.ok(limits.length >= 6, 'every keyset list takes a limit')
  for (const { at, schema } of limits) t.same(schema, { type: 'integer', minimum: 1 }, at)
})

t.test('the automation name parameter documents how a "/" is written', async (t) => {
  const named = operations(await served(t)).flatMap(({ route, method, operation }) =>
    (operation.parameters as Json[]).filter((p) => p.in === 'path' && p.name === 'name').map((p) => ({ at: `${method} ${route}`, p })))
  t.ok(named.length >= 10)
  for (const { at, p } of named) t.match(p.description, /"\/" written as "__"/, at)
})

t.test('the run read is typed: a full read or the named fields, with enums for status and waitingFor', async (t) => {
  const document = await served(t)
  const read = document.paths['/api/v1/runs/{runId}'].get.responses['200'].content['application/json'].schema
  t.same(read, { anyOf: [{ $ref: '#/components/schemas/Run' }, { $ref: '#/components/schemas/RunFields' }] })
  t.same(document.paths['/api/v1/projects/{id}/runs/{runId}'].get.responses['200'].content['application/json'].schema, read,
    'the project twin answers the same shape')
  const { Run, RunStatus, RunWaitingFor } = document.components.schemas
  t.equal(Run.additionalProperties, false, 'a full read holds no undeclared key')
  t.same(Run.properties.status, { $ref: '#/components/schemas/RunStatus' })
  t.same(RunStatus.enum, ['queued', 'running', 'waiting', 'completed', 'failed', 'cancelled'])
  t.same(RunWaitingFor.enum, ['approval', 'ask', 'agent', 'repeat'])
  t.same(document.components.schemas.RunSummary.properties.status, { $ref: '#/components/schemas/RunStatus' }, 'list rows too')
})

t.test('the automation\'s trigger is the spec\'s summary with its health fields, or null', async (t) => {
  const { Automation, TriggerSummary, Trigger } = (await served(t)).components.schemas
  t.same(Automation.properties.trigger, { $ref: '#/components/schemas/TriggerSummary' })
  t.ok(TriggerSummary.anyOf.some((s: Json) => s.$ref === '#/components/schemas/Trigger'), 'the trigger routes\' shape')
  t.ok(TriggerSummary.anyOf.some((s: Json) => s.type === 'null'), 'null when none is bound')
  t.same(Trigger.oneOf.map((s: Json) => s.properties.kind.const), ['schedule', 'webhook', 'event'])
  for (const kind of Trigger.oneOf) {
    for (const field of ['enabled', 'lastFiredAt', 'lastRunId', 'lastSkippedAt', 'lastSkipReason', 'consecutiveFailures',
      'lastFailedAt', 'lastFailureCode', 'lastFailedRunId']) t.ok(kind.required.includes(field), `${kind.properties.kind.const} has ${field}`)
  }
})

// Every coded refusal the service can raise: app.fail and the authentication
// prelude in SQL, HttpError and literal envelopes in the server.
async function raisedCodes(): Promise<Set<string>> {
  const root = path.resolve(import.meta.dirname, '../..')
  const codes = new Set<string>()
  const scan = async (directory: string, extension: string, patterns: RegExp[]) => {
    for (const entry of await readdir(path.join(root, directory), { recursive: true, withFileTypes: true })) {
      if (!entry.isFile() || !entry.name.endsWith(extension)) continue
      const text = await readFile(path.join(entry.parentPath, entry.name), 'utf8')
      for (const pattern of patterns) for (const match of text.matchAll(pattern)) codes.add(match[1]!)
    }
  }
  await scan('db/functions', '.sql', [/app\.fail\(\s*'([A-Z_]+)'/g, /'code',\s*'([A-Z_]+)'/g, /app\.webhook_refusal\(\s*'([A-Z_]+)'/g])
  await scan('server', '.ts', [/HttpError\(\s*\d{3},\s*'([A-Z_]+)'/g, /\bcode: '([A-Z_]+)'/g])
  return codes
}

t.test('the error envelope\'s code lists exactly the codes the service raises', async (t) => {
  const document = await served(t)
  t.same(document.components.schemas.Error.properties.code, { $ref: '#/components/schemas/ErrorCode' })
  const declared = new Set<string>(document.components.schemas.ErrorCode.enum)
  const raised = await raisedCodes()
  t.ok(raised.size > 30, 'the scan finds the service\'s refusals')
  t.same([...raised].filter((code) => !declared.has(code)).sort(), [], 'every raised code is declared')
  t.same([...declared].filter((code) => !raised.has(code)).sort(), [], 'every declared code is raised somewhere')
})

t.test('a run\'s input and an ask\'s answer are documented as objects', async (t) => {
  const document = await served(t)
  const body = (route: string) => document.paths[route].post.requestBody.content['application/json'].schema
  t.same(body('/api/v1/automations/{name}/runs').properties.input, { type: 'object' })
  t.same(body('/api/v1/runs/{runId}/asks/{askId}').properties.answer, { type: 'object' })
})
