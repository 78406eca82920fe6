// A client generated with openapi-typescript from the served document types a run's
// status: a program that polls a run until it finishes type-checks with no cast, and
// stops type-checking once the document no longer says what a status is.
import t, { type Test } from 'tap'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import ts from 'typescript'
import openapiTS, { astToString } from 'openapi-typescript'
import { startTestService } from '../lib/service.ts'

type Json = Record<string, any>

const poller = `
import type { components, paths } from './api'

type Started = paths['/api/v1/automations/{name}/runs']['post']['responses'][202]['content']['application/json']
type RunRead = paths['/api/v1/runs/{runId}']['get']['responses'][200]['content']['application/json']
type Finished = Exclude<components['schemas']['RunStatus'], 'queued' | 'running' | 'waiting'>

export async function runToEnd(base: string, key: string, name: string, input: Record<string, unknown>): Promise<Finished> {
  const headers = { authorization: 'Bearer ' + key, 'content-type': 'application/json' }
  const response = await fetch(base + '/api/v1/automations/' + name.replaceAll('/', '__') + '/runs',
    { method: 'POST', headers, body: JSON.stringify({ input }) })
  const started: Started = await response.json()
  for (;;) {
    const run: RunRead = await (await fetch(base + '/api/v1/runs/' + started.runId, { headers })).json()
    const status = run.status
    switch (status) {
      case 'queued': case 'running': case 'waiting':
        await new Promise((resolve) => setTimeout(resolve, 100))
        break
      case 'completed': case 'failed': case 'cancelled':
        return status
      case undefined:
        throw new Error('a full read always carries the status')
      default: {
        const unexpected: never = status
        throw new Error('unknown status ' + String(unexpected))
      }
    }
  }
}
`

/** The type errors of the polling program against a client generated from document. */
async function typeErrors(t: Test, document: Json): Promise<string[]> {
  const directory = await mkdtemp(path.join(tmpdir(), 'tale-client-'))
  t.teardown(() => rm(directory, { recursive: true, force: true }))
  await writeFile(path.join(directory, 'api.ts'), astToString(await openapiTS(document as never)))
  await writeFile(path.join(directory, 'poll.ts'), poller)
  const program = ts.createProgram([path.join(directory, 'poll.ts')], {
    strict: true, noEmit: true, target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.ES2022,
    moduleResolution: ts.ModuleResolutionKind.Bundler, lib: ['lib.es2022.d.ts', 'lib.dom.d.ts', 'lib.es2021.string.d.ts'], types: [],
  })
  return ts.getPreEmitDiagnostics(program).map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'))
}

async function served(t: Test): Promise<Json> {
  const service = await startTestService(t)
  return (await service.request('GET', '/openapi.json')).body
}

t.test('a generated client polls a run to its end with no cast', async (t) => {
  t.same(await typeErrors(t, await served(t)), [])
})

t.test('the same program fails to type-check when the run status is not typed', async (t) => {
  const document = await served(t)
  document.components.schemas.RunStatus = {}
  const errors = await typeErrors(t, document)
  t.ok(errors.some((message) => /not assignable to type 'never'/.test(message)), errors.join('\n'))
})

t.test('the same program fails to type-check when the status is any string', async (t) => {
  const document = await served(t)
  document.components.schemas.RunStatus = { type: 'string' }
  t.not((await typeErrors(t, document)).length, 0)
})
