// Every step type and every failure code the engine produces, with real outbound HTTP
// to loopback servers: an endpoint for http steps and an OpenAI-compatible provider.
import t, { type Test } from 'tap'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { deploy, waitForRun } from '../lib/automations.ts'
import { world } from '../lib/world.ts'

interface Remote {
  url: string
  hits: Map<string, number>
}

// Answers by path; counts every request it sees.
async function remote(t: Test): Promise<Remote> {
  const hits = new Map<string, number>()
  const server = http.createServer(async (req, res) => {
    const path = (req.url ?? '/').split('?')[0]!
    hits.set(path, (hits.get(path) ?? 0) + 1)
    const chunks: Buffer[] = []
    for await (const chunk of req) chunks.push(chunk as Buffer)
    const body = Buffer.concat(chunks).toString()
    const json = (status: number, value: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' })
      res.end(JSON.stringify(value))
    }
    switch (path) {
      case '/ok': return json(200, { value: 42, method: req.method, received: body ? JSON.parse(body) : null, auth: req.headers.authorization ?? null })
      case '/fail': return json(500, { error: 'boom' })
      case '/denied': return json(401, { error: 'who are you' })
      case '/flaky': return hits.get(path)! <= 2 ? json(503, { error: 'try later' }) : json(200, { value: 'third time' })
      case '/slow': return setTimeout(() => json(200, { value: 'late' }), 800)
      case '/v1/chat/completions': {
        if (req.headers.authorization !== 'Bearer sk-test') return json(401, { error: 'bad key' })
        const request = JSON.parse(body) as { model: string; messages: { content: string }[] }
        if (request.model === 'broke-model') return json(402, { error: { message: 'insufficient credit' } })
        if (request.model === 'ghost-model') return json(404, { error: { message: 'no such model' } })
        const prompt = request.messages.at(-1)!.content
        return json(200, { choices: [{ message: { role: 'assistant', content: prompt === 'score' ? '{"score": 0.9}' : `remote: ${prompt}` } }] })
      }
      default: return json(404, { error: 'no route' })
    }
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()) }))
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, hits }
}

async function stepsWorld(t: Test) {
  const target = await remote(t)
  const seeded = await world(t, {
    worker: true,
    seed: {
      providers: [
        { org: 'acme', slug: 'lab', kind: 'openai-compatible', baseUrl: `${target.url}/v1`, apiKey: 'sk-test' },
        { org: 'acme', slug: 'nokey', kind: 'openai-compatible', baseUrl: `${target.url}/v1`, apiKey: null },
        { org: 'acme', slug: 'wrongkey', kind: 'openai-compatible', baseUrl: `${target.url}/v1`, apiKey: 'sk-wrong' },
      ],
      models: [
        { org: 'acme', id: 'lab-large', providerSlug: 'lab', contextWindow: 8000, maxOutputTokens: null, default: true },
        { org: 'acme', id: 'broke-model', providerSlug: 'lab', contextWindow: 8000, maxOutputTokens: null, default: false },
        { org: 'acme', id: 'ghost-model', providerSlug: 'lab', contextWindow: 8000, maxOutputTokens: null, default: false },
        { org: 'acme', id: 'keyless', providerSlug: 'nokey', contextWindow: 8000, maxOutputTokens: null, default: false },
        { org: 'acme', id: 'refused', providerSlug: 'wrongkey', contextWindow: 8000, maxOutputTokens: null, default: false },
      ],
      secrets: [{ org: 'acme', name: 'API_TOKEN', value: 'token-123' }],
    },
  })
  const client = await seeded.dev.mcp()
  let counter = 0
  // Deploys a one-off automation and runs it to a settled state.
  const run = async (steps: unknown[], options: { input?: unknown; config?: unknown; mode?: string; settle?: (r: any) => boolean } = {}) => {
    const name = `steps/case-${++counter}`
    await deploy(client, { name, steps, ...(options.config ? { config: options.config } : {}) })
    const started = await seeded.dev.post(`/api/v1/automations/${name.replace('/', '__')}/runs`, { input: options.input ?? {}, mode: options.mode ?? 'live' })
    if (started.status !== 202) throw new Error(JSON.stringify(started.body))
    return waitForRun(seeded.dev.get, started.body.runId, options.settle)
  }
  return { ...seeded, target, run }
}

const output = (mapping: Record<string, unknown>) => ({ slug: 'end', type: 'output', config: { mapping } })

t.test('set, condition and output, with typed templates', async (t) => {
  const { run } = await stepsWorld(t)
  const steps = [
    { slug: 'vars', type: 'set', config: { values: { n: '{{ input.n * 2 }}', label: 'n is {{ input.n }}', list: ['{{ input.n }}', 'x'] } }, next: { success: 'check' } },
    { slug: 'check', type: 'condition', config: { expression: 'steps.vars.output.n > config.threshold' }, next: { true: 'big', false: 'small' } },
    { slug: 'big', type: 'output', config: { mapping: { size: 'big', n: '{{ steps.vars.output.n }}', label: '{{ steps.vars.output.label }}', list: '{{ steps.vars.output.list }}' } } },
    { slug: 'small', type: 'output', config: { mapping: { size: 'small' } } },
  ]
  const config = { variables: { threshold: 10 } }
  const big = await run(steps, { input: { n: 6 }, config })
  t.match(big, { status: 'completed', output: { size: 'big', n: 12, label: 'n is 6', list: [6, 'x'] } })
  t.equal(typeof big.output.n, 'number', 'a string that is one template keeps the value\'s type')
  t.same(big.trace.map((e: any) => [e.slug, e.port]), [['vars', 'success'], ['check', 'true'], ['big', 'success']])
  const small = await run(steps, { input: { n: 2 }, config })
  t.match(small, { status: 'completed', output: { size: 'small' } })
})

t.test('an unresolved reference fails with node_error, never renders empty', async (t) => {
  const { run } = await stepsWorld(t)
  const failed = await run([{ slug: 'a', type: 'set', config: { values: { x: 'Hi {{ input.missing }}' } }, next: { success: 'end' } }, output({})])
  t.match(failed, { status: 'failed', failureCode: 'node_error' })
  t.match(failed.detail, /input\.missing/)
  const notBoolean = await run([{ slug: 'c', type: 'condition', config: { expression: 'input.n' }, next: { true: 'end' } }, output({})], { input: { n: 3 } })
  t.match(notBoolean, { status: 'failed', failureCode: 'node_error' })
})

t.test('http steps: real requests, secrets in templates, failure codes, retries', async (t) => {
  const { run, target } = await stepsWorld(t)
  const ok = await run([
    { slug: 'call', type: 'http', config: { method: 'POST', url: `${target.url}/ok`, headers: { authorization: 'Bearer {{ secrets.API_TOKEN }}' }, body: { n: '{{ input.n }}' } }, next: { success: 'end' } },
    output({ value: '{{ steps.call.output.body.value }}', status: '{{ steps.call.output.status }}', sent: '{{ steps.call.output.body.received.n }}', auth: '{{ steps.call.output.body.auth }}' }),
  ], { input: { n: 5 } })
  t.match(ok, { status: 'completed', output: { value: 42, status: 200, sent: 5, auth: 'Bearer token-123' } })
  t.match(ok.effects, [{ step: 'call', type: 'http', method: 'POST', status: 200 }], 'a write is listed among the effects')

  const call = (path: string) => [{ slug: 'call', type: 'http', config: { url: `${target.url}${path}` }, next: { success: 'end' } }, output({})]
  t.match(await run(call('/fail')), { status: 'failed', failureCode: 'connector_error' })
  t.match(await run(call('/denied')), { status: 'failed', failureCode: 'auth_error' })
  t.match(await run([{ slug: 'call', type: 'http', config: { url: 'http://127.0.0.1:1/nothing' }, next: { success: 'end' } }, output({})]),
    { status: 'failed', failureCode: 'connector_error' }, 'a refused connection')

  const retried = await run(call('/flaky'), { config: { retry: { maxRetries: 2, backoffMs: 10 } } })
  t.match(retried, { status: 'completed' }, 'two failures, then success within maxRetries')
  t.equal(target.hits.get('/flaky'), 3)
  t.equal(retried.trace.length, 2, 'one trace entry per step, however many attempts')
})

t.test('llm steps: the local model, an OpenAI-compatible provider, and their failure codes', async (t) => {
  const { run, target } = await stepsWorld(t)
  const llm = (config: Record<string, unknown>) => [{ slug: 'ask', type: 'llm', config, next: { success: 'end' } }, output({ answer: '{{ steps.ask.output }}' })]
  t.match(await run(llm({ model: 'local-echo', prompt: 'Hello {{ input.who }}' }), { input: { who: 'Ada' } }),
    { status: 'completed', output: { answer: 'Hello Ada' } }, 'the local model answers with its prompt')
  const json = await run(llm({ model: 'local-echo', prompt: '{"score": 0.5}', outputFormat: 'json',
    outputSchema: { type: 'object', properties: { score: { type: 'number' } }, required: ['score'] } }))
  t.match(json, { status: 'completed', output: { answer: { score: 0.5 } } })
  t.match(await run(llm({ model: 'local-echo', prompt: 'not json', outputFormat: 'json' })), { status: 'failed', failureCode: 'llm_output_invalid' })
  t.match(await run(llm({ model: 'local-echo', prompt: '{"score": "high"}', outputFormat: 'json',
    outputSchema: { type: 'object', properties: { score: { type: 'number' } } } })), { status: 'failed', failureCode: 'llm_output_invalid' },
  'JSON that misses the outputSchema')

  t.match(await run(llm({ model: 'lab-large', prompt: 'hi' })), { status: 'completed', output: { answer: 'remote: hi' } })
  t.ok(target.hits.get('/v1/chat/completions')! >= 1, 'the provider was called over HTTP')
  t.match(await run(llm({ model: 'lab-large', prompt: 'score', outputFormat: 'json' })), { status: 'completed', output: { answer: { score: 0.9 } } })
  t.match(await run(llm({ model: 'nowhere', prompt: 'hi' })), { status: 'failed', failureCode: 'model_not_found' }, 'not in the catalog')
  t.match(await run(llm({ model: 'ghost-model', prompt: 'hi' })), { status: 'failed', failureCode: 'model_not_found' }, 'unknown to the provider')
  t.match(await run(llm({ model: 'keyless', prompt: 'hi' })), { status: 'failed', failureCode: 'missing_api_key' })
  t.match(await run(llm({ model: 'broke-model', prompt: 'hi' })), { status: 'failed', failureCode: 'credit_exhausted' })
  t.match(await run(llm({ model: 'refused', prompt: 'hi' })), { status: 'failed', failureCode: 'auth_error' }, 'the provider refuses the key')
})

t.test('mock runs answer side-effecting steps with their mocks and call nothing', async (t) => {
  const { run, target } = await stepsWorld(t)
  const mocked = await run([
    { slug: 'call', type: 'http', config: { url: `${target.url}/ok` }, mock: { body: { value: 7 } }, next: { success: 'think' } },
    { slug: 'think', type: 'llm', config: { model: 'lab-large', prompt: 'hi' }, mock: 'mocked thought', next: { success: 'act' } },
    { slug: 'act', type: 'action', config: { action: 'task.create', params: { title: 'x' } }, mock: { taskId: 't-1' }, next: { success: 'delegate' } },
    { slug: 'delegate', type: 'agent', config: { agent: 'helper', prompt: 'do it' }, mock: { done: true }, next: { success: 'end' } },
    output({ value: '{{ steps.call.output.body.value }}', thought: '{{ steps.think.output }}', task: '{{ steps.act.output.taskId }}', done: '{{ steps.delegate.output.done }}' }),
  ], { mode: 'mock' })
  t.match(mocked, { mode: 'mock', status: 'completed', output: { value: 7, thought: 'mocked thought', task: 't-1', done: true } })
  t.equal(target.hits.get('/ok'), undefined, 'no request left the run')
  t.equal(target.hits.get('/v1/chat/completions'), undefined)
})

t.test('action and agent steps in live runs', async (t) => {
  const { run } = await stepsWorld(t)
  // Action steps write for real (tasks: test/tasks/actions.test.ts; contacts:
  // test/records/contacts.test.ts); one the rules refuse fails the step with node_error.
  const action = await run([{ slug: 'act', type: 'action', config: { action: 'contact.upsert', params: { phone: '+1 555' } }, next: { success: 'end' } }, output({})])
  t.match(action, { status: 'failed', failureCode: 'node_error' })
  t.match(action.detail, /contact\.upsert: .*externalId or email.*INVALID_BODY/)
  // Agents that run are tested in test/agents/steps.test.ts; an agent step that cannot
  // reach an agent fails at once instead of parking the run.
  const agent = await run([{ slug: 'delegate', type: 'agent', config: { agent: 'helper', prompt: 'go' }, next: { success: 'end' } }, output({})])
  t.match(agent, { status: 'failed', failureCode: 'node_error', detail: /names the agent's project in the step's projectId/ })
})

t.test('repeat: over items, and polling with a delay that parks the run', async (t) => {
  const { run, dev } = await stepsWorld(t)
  const items = await run([
    { slug: 'each', type: 'repeat', config: { items: 'input.names' }, next: { loop: 'greet', done: 'end' } },
    { slug: 'greet', type: 'set', config: { values: { line: 'hi {{ loop.item }} #{{ loop.index }}' } } },
    output({ last: '{{ steps.greet.output.line }}', iterations: '{{ steps.each.output.iterations }}' }),
  ], { input: { names: ['a', 'b', 'c'] } })
  t.match(items, { status: 'completed', output: { last: 'hi c #2', iterations: 3 } })
  t.equal(items.trace.filter((e: any) => e.slug === 'greet').length, 3, 'the loop body ran once per item')

  const polled = await run([
    { slug: 'poll', type: 'repeat', config: { until: 'loop.iteration >= 2', delayMs: 300, maxIterations: 5 }, next: { loop: 'tick', done: 'end' } },
    { slug: 'tick', type: 'set', config: { values: { at: '{{ loop.iteration }}' } } },
    output({ ticks: '{{ steps.tick.output.at }}' }),
  ], { settle: (r) => r.status === 'waiting' })
  t.match(polled, { status: 'waiting', waitingFor: 'repeat', detail: 'repeat:poll' }, 'between iterations the run waits, healthy')
  const finished = await waitForRun(dev.get, polled.runId, (r) => ['completed', 'failed', 'cancelled'].includes(r.status))
  t.match(finished, { status: 'completed', output: { ticks: 2 } }, 'and resumes when the delay is over')
  t.equal(finished.trace.filter((e: any) => e.slug === 'tick').length, 2)
})

t.test('the run timeout fails a run with timeout', async (t) => {
  const { run, target } = await stepsWorld(t)
  const slow = await run([
    { slug: 'one', type: 'http', config: { url: `${target.url}/slow` }, next: { success: 'two' } },
    { slug: 'two', type: 'http', config: { url: `${target.url}/slow` }, next: { success: 'end' } },
    output({}),
  ], { config: { timeoutMs: 1000 } })
  t.match(slow, { status: 'failed', failureCode: 'timeout' })
  // On a loaded machine the first step alone may outlast the second: the deadline
  // passes during one of the two, and no step runs after it.
  const ran = slow.trace.map((e: { slug: string }) => e.slug)
  t.ok(['one', 'one,two'].includes(ran.join(',')), `the deadline passed during a step (${ran.join(',')})`)
  t.equal(target.hits.get('/slow'), ran.length, 'no step ran after it')
})
