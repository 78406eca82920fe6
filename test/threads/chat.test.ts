// Chat threads (SPEC.md "Thread, message, generation" and the Chat threads endpoints):
// sends answered 202, answers streamed by the worker from a provider on loopback,
// settled complete or failed, stopped on request; one owner per thread.
import t, { type Test } from 'tap'
import { world } from '../lib/world.ts'
import { refused } from '../lib/assert.ts'
import { eventually } from '../lib/wait.ts'
import { fakeProvider } from '../lib/fake-provider.ts'
import type { Client } from '../lib/world.ts'

const model = (id: string, extra: Record<string, unknown> = {}) =>
  ({ org: 'acme', id, providerSlug: 'fake', contextWindow: 8000, maxOutputTokens: null, default: false, ...extra })

async function chatWorld(t: Test, options: { worker?: boolean; env?: Record<string, string> } = {}) {
  const fake = await fakeProvider(t)
  const w = await world(t, {
    worker: options.worker ?? true, env: { MODEL_TIMEOUT_MS: '400', ...options.env },
    seed: {
      providers: [
        { org: 'acme', slug: 'fake', kind: 'openai-compatible', baseUrl: fake.url, apiKey: 'sk-fake' },
        { org: 'acme', slug: 'mirror', kind: 'openai-compatible', baseUrl: fake.url, apiKey: 'sk-fake' },
        { org: 'acme', slug: 'locked', kind: 'openai-compatible', baseUrl: fake.url, apiKey: 'sk-wrong' },
      ],
      models: [
        model('echo-model'), model('slow-model'), model('fail-model'), model('hang-model'),
        model('short-model', { maxOutputTokens: 50 }), model('tiny-model', { contextWindow: 20 }),
        model('twin-model'), model('twin-model', { providerSlug: 'mirror' }), model('locked-model', { providerSlug: 'locked' }),
      ],
    },
  })
  return { ...w, fake }
}

/** A new personal thread of the client; its base path. */
async function threadOf(client: Client, prefix = '/api/v1'): Promise<string> {
  const created = await client.post(`${prefix}/threads`, {})
  if (created.status !== 201) throw new Error(created.text)
  return `${prefix}/threads/${created.body.id}`
}

/** Sends and waits for the turn to settle; the assistant message. */
async function ask(client: Client, thread: string, body: Record<string, unknown>) {
  const sent = await client.post(`${thread}/messages`, body)
  if (sent.status !== 202) throw new Error(`${sent.status} ${sent.text}`)
  await eventually(() => client.get(`${thread}/generation`), (g) => g.body.status === 'idle')
  return { sent, reply: (await client.get(`${thread}/messages/${sent.body.replyMessageId}`)).body }
}

t.test('a thread is created with 201, its id and Location, and listed under page', async (t) => {
  const { olive } = await chatWorld(t, { worker: false })
  const created = await olive.post('/api/v1/threads', {})
  t.equal(created.status, 201)
  t.same(created.body, { id: created.body.id })
  t.equal(created.headers.get('location'), `/api/v1/threads/${created.body.id}`)
  const second = await olive.post('/api/v1/threads', {})
  const list = await olive.get('/api/v1/threads?limit=1')
  t.same(list.body.page.map((x: { id: string }) => x.id), [second.body.id], 'newest first')
  t.match(list.body.page[0], { projectId: null, generation: { status: 'idle', lastMessageId: null } })
  const rest = await olive.get(`/api/v1/threads?limit=1&cursor=${encodeURIComponent(list.body.continueCursor)}`)
  t.same(rest.body.page.map((x: { id: string }) => x.id), [created.body.id])
  t.equal(rest.body.isDone, true)
})

t.test('a send answers 202, and the worker streams the answer into a complete assistant message', async (t) => {
  const { olive } = await chatWorld(t)
  const thread = await threadOf(olive)
  const { sent, reply } = await ask(olive, thread, { content: 'hello there', model: 'echo-model' })
  t.same(sent.body, { messageId: sent.body.messageId, threadId: thread.split('/').pop(), status: 'accepted', model: 'echo-model',
    replyMessageId: sent.body.replyMessageId, poll: `${thread}/generation` })
  t.match(reply, { role: 'assistant', status: 'complete', finishReason: 'stop', errorCode: null, model: 'echo-model',
    providerSlug: 'fake', replyTo: sent.body.messageId, parts: [{ type: 'text', text: 'echo: hello there' }] })
  t.same((await olive.get(`${thread}/generation`)).body, { status: 'idle', lastMessageId: sent.body.replyMessageId })
  const messages = (await olive.get(`${thread}/messages`)).body.page
  t.same(messages.map((m: { role: string }) => m.role), ['assistant', 'user'], 'newest first')
  t.same(messages[1].parts, [{ type: 'text', text: 'hello there' }])
})

t.test('the provider hears the whole conversation, and the built-in local model answers too', async (t) => {
  const { olive, fake } = await chatWorld(t)
  const thread = await threadOf(olive)
  await ask(olive, thread, { content: 'first', model: 'echo-model' })
  await ask(olive, thread, { content: 'second', model: 'echo-model' })
  t.same(fake.requests.at(-1).messages.map((m: { role: string; content: string }) => [m.role, m.content]),
    [['user', 'first'], ['assistant', 'echo: first'], ['user', 'second']])
  t.equal(fake.requests.at(-1).stream, true, 'streamed')
  const { reply } = await ask(olive, thread, { content: 'say this', model: 'local-echo', providerSlug: 'local' })
  t.match(reply, { status: 'complete', parts: [{ type: 'text', text: 'say this' }] })
})

t.test('a poller sees the answer grow while the generation streams', async (t) => {
  const { olive } = await chatWorld(t)
  const thread = await threadOf(olive)
  const sent = await olive.post(`${thread}/messages`, { content: 'one two three four five six seven eight', model: 'slow-model' })
  const reply = `${thread}/messages/${sent.body.replyMessageId}`
  const partial = await eventually(() => olive.get(reply), (m) => m.body.parts.length > 0)
  t.equal(partial.body.status, 'streaming')
  t.equal((await olive.get(`${thread}/generation`)).body.status, 'streaming')
  await eventually(() => olive.get(`${thread}/generation`), (g) => g.body.status === 'idle')
  const done = (await olive.get(reply)).body
  t.ok(partial.body.parts[0].text.length < done.parts[0].text.length, 'the text grew')
  t.equal(done.parts[0].text, 'echo: one two three four five six seven eight')
})

t.test('an Idempotency-Key makes a replay answer the same message', async (t) => {
  const { olive } = await chatWorld(t)
  const thread = await threadOf(olive)
  const body = { content: 'once', model: 'echo-model' }
  const first = await olive.post(`${thread}/messages`, body, { 'idempotency-key': 'send-1' })
  await eventually(() => olive.get(`${thread}/generation`), (g) => g.body.status === 'idle')
  const replay = await olive.post(`${thread}/messages`, body, { 'idempotency-key': 'send-1' })
  t.equal(replay.status, 202)
  t.same(replay.body, first.body)
  t.equal((await olive.get(`${thread}/messages`)).body.page.length, 2, 'one message and one answer')
  for (const key of ['', 'x'.repeat(256), 'tab\there', 'caf\u00e9']) {
    refused(t, await olive.post(`${thread}/messages`, body, { 'idempotency-key': key }), 400, 'INVALID_HEADER', JSON.stringify(key))
  }
})

t.test('a stop mid-stream keeps the text so far and settles the thread', async (t) => {
  const { olive } = await chatWorld(t)
  const thread = await threadOf(olive)
  const sent = await olive.post(`${thread}/messages`, { content: Array.from({ length: 30 }, (_, i) => `w${i}`).join(' '), model: 'slow-model' })
  const reply = `${thread}/messages/${sent.body.replyMessageId}`
  await eventually(() => olive.get(reply), (m) => m.body.parts.length > 0)
  const stopped = await olive.del(`${thread}/generation`)
  t.same(stopped.body, { status: 'idle', lastMessageId: sent.body.replyMessageId })
  const at = (await olive.get(reply)).body
  t.match(at, { status: 'stopped', finishReason: 'stopped' })
  await new Promise((r) => setTimeout(r, 500))
  const later = (await olive.get(reply)).body
  t.same(later.parts, at.parts, 'the worker wrote nothing after the stop')
  t.equal(later.status, 'stopped')
  t.ok(later.parts[0].text.length < 'echo: '.length + 30 * 4, 'the answer was cut short')
  t.equal((await ask(olive, thread, { content: 'again', model: 'echo-model' })).reply.status, 'complete', 'the thread takes the next send')
})

t.test('a stop while the turn is queued leaves nothing for the worker', async (t) => {
  const { olive, service, seeded } = await chatWorld(t, { worker: false })
  const thread = await threadOf(olive)
  const sent = await olive.post(`${thread}/messages`, { content: 'never mind', model: 'echo-model' })
  t.equal((await olive.get(`${thread}/generation`)).body.status, 'streaming', 'a send makes the generation streaming')
  t.equal((await olive.del(`${thread}/generation`)).body.status, 'idle')
  t.match((await olive.get(`${thread}/messages/${sent.body.replyMessageId}`)).body, { status: 'stopped', parts: [] })
  const [row] = await service.db.owner<{ turn: unknown }[]>`
    select app.worker_generation_start(${seeded.organizations.acme!.id}, ${sent.body.replyMessageId}) as turn`
  t.equal(row!.turn, null, 'the queued job finds nothing to answer')
})

t.test('a failure before any output is still an assistant message, failed with its code', async (t) => {
  const { olive } = await chatWorld(t)
  const thread = await threadOf(olive)
  t.match((await ask(olive, thread, { content: 'hi', model: 'fail-model' })).reply,
    { role: 'assistant', status: 'failed', errorCode: 'connector_error', error: /500/, parts: [] })
  t.match((await ask(olive, thread, { content: 'hi', model: 'locked-model' })).reply, { status: 'failed', errorCode: 'auth_error' })
})

t.test('a provider that hangs times out to a failed message that keeps what arrived', async (t) => {
  const { olive } = await chatWorld(t)
  const thread = await threadOf(olive)
  t.match((await ask(olive, thread, { content: 'hi', model: 'hang-model' })).reply,
    { status: 'failed', errorCode: 'timeout', parts: [{ type: 'text', text: 'Thinking' }] })
})

t.test('finishReason is length when the output limit was reached', async (t) => {
  const { olive, fake } = await chatWorld(t)
  const thread = await threadOf(olive)
  const { reply } = await ask(olive, thread, { content: 'a b c d e f', model: 'short-model', maxOutputTokens: 3 })
  t.match(reply, { status: 'complete', finishReason: 'length', parts: [{ text: 'a b c' }] })
  t.equal(fake.requests.at(-1).max_tokens, 3, 'the ceiling reached the provider')
  const local = await ask(olive, thread, { content: 'abcdefghijklmnop', model: 'local-echo', maxOutputTokens: 2 })
  t.match(local.reply, { status: 'complete', finishReason: 'length', parts: [{ text: 'abcdefgh' }] }, 'the local model too')
})

t.test('a send is refused up front when its model, context or output does not fit', async (t) => {
  const { olive } = await chatWorld(t, { worker: false })
  const thread = await threadOf(olive)
  const send = (body: Record<string, unknown>) => olive.post(`${thread}/messages`, body)
  t.match(refused(t, await send({ content: 'x', model: 'no-such-model' }), 400, 'INVALID_BODY').data.issues, [{ path: 'model' }])
  t.match(refused(t, await send({ content: 'x', model: 'twin-model' }), 400, 'INVALID_BODY', 'ambiguous').data.issues,
    [{ path: 'providerSlug' }])
  t.match(refused(t, await send({ content: 'x', model: 'echo-model', providerSlug: 'mirror' }), 400, 'INVALID_BODY').data.issues,
    [{ path: 'providerSlug' }])
  const tooLong = refused(t, await send({ content: 'x'.repeat(100), model: 'tiny-model' }), 400, 'INVALID_BODY', 'context window')
  t.match(tooLong.data, { contextWindow: 20, estimatedTokens: 25, issues: [{ path: 'content' }] })
  t.match(refused(t, await send({ content: 'x', model: 'short-model', maxOutputTokens: 51 }), 400, 'INVALID_BODY').data,
    { maxOutputTokens: 50, issues: [{ path: 'maxOutputTokens' }] })
  refused(t, await send({ content: 'x', model: 'tiny-model', maxOutputTokens: 20 }), 400, 'INVALID_BODY', 'output that cannot fit the window')
  t.match(refused(t, await send({ content: 'x' }), 400, 'INVALID_BODY', 'the model is always explicit').data.issues, [{ path: 'model' }])
  t.equal((await send({ content: 'x', model: 'twin-model', providerSlug: 'mirror' })).status, 202)
  refused(t, await send({ content: 'y', model: 'echo-model' }), 409, 'GENERATION_IN_PROGRESS', 'a second send while the first streams')
  t.equal((await olive.get(`${thread}/messages`)).body.page.length, 2, 'nothing written by the refusals')
})

t.test('only the key holder\'s own threads exist for them', async (t) => {
  const { olive, adam, gina } = await chatWorld(t)
  const thread = await threadOf(olive)
  const { sent } = await ask(olive, thread, { content: 'private', model: 'echo-model' })
  for (const [who, client] of [['an admin of the organization', adam], ['another organization', gina]] as const) {
    refused(t, await client.get(`${thread}/messages`), 404, 'NOT_FOUND', `${who}: messages`)
    refused(t, await client.get(`${thread}/messages/${sent.body.messageId}`), 404, 'NOT_FOUND', `${who}: a message`)
    refused(t, await client.get(`${thread}/generation`), 404, 'NOT_FOUND', `${who}: generation`)
    refused(t, await client.del(`${thread}/generation`), 404, 'NOT_FOUND', `${who}: stop`)
    refused(t, await client.post(`${thread}/messages`, { content: 'hi', model: 'echo-model' }), 404, 'NOT_FOUND', `${who}: send`)
  }
  t.same((await adam.get('/api/v1/threads')).body.page, [], 'the admin lists none of them')
})

t.test('project threads: readers may chat, the scope is the route\'s, others answer 404', async (t) => {
  const { max, olive, alpha, beta } = await chatWorld(t)
  const thread = await threadOf(max, `/api/v1/projects/${alpha}`)
  t.match(thread, new RegExp(`^/api/v1/projects/${alpha}/threads/`))
  const { reply } = await ask(max, thread, { content: 'a reader asks', model: 'echo-model' })
  t.equal(reply.status, 'complete')
  const id = thread.split('/').pop()
  refused(t, await max.get(`/api/v1/threads/${id}/messages`), 404, 'NOT_FOUND', 'not under the personal scope')
  refused(t, await max.get(`/api/v1/projects/${beta}/threads/${id}/messages`), 404, 'NOT_FOUND', 'a project max cannot see')
  t.same((await max.get(`/api/v1/projects/${alpha}/threads`)).body.page.map((x: { id: string }) => x.id), [id])
  t.same((await max.get('/api/v1/threads')).body.page, [], 'a project thread is not listed as personal')
  refused(t, await olive.get(`${thread}/messages`), 404, 'NOT_FOUND', 'the project\'s owner does not see max\'s thread')
})

t.test('projectId added to a personal request does not change its scope', async (t) => {
  const { olive, alpha } = await chatWorld(t)
  const created = await olive.post('/api/v1/threads', { projectId: alpha })
  t.equal(created.status, 201)
  const thread = `/api/v1/threads/${created.body.id}`
  t.equal((await olive.get('/api/v1/threads')).body.page[0].projectId, null)
  const sent = await olive.post(`${thread}/messages`, { content: 'hi', model: 'echo-model', projectId: alpha })
  t.equal(sent.body.poll, `${thread}/generation`)
  refused(t, await olive.get(`/api/v1/projects/${alpha}/threads/${created.body.id}/generation`), 404, 'NOT_FOUND')
})

t.test('sends draw on the starting-work budget', async (t) => {
  const { olive } = await chatWorld(t, { worker: false, env: { RATE_LIMIT_SCALE: '0.05' } })
  const thread = await threadOf(olive)
  let limited = null
  for (let i = 0; i < 8 && !limited; i++) {
    const res = await olive.post(`${thread}/messages`, { content: 'x', model: 'echo-model' })
    if (res.status === 429) limited = res
    else await olive.del(`${thread}/generation`)
  }
  t.ok(limited, 'the narrow budget (2 at this scale) runs out first')
  if (limited) refused(t, limited, 429, 'RATE_LIMITED')
})
