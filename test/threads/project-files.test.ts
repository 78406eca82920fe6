// The assistant reads files in a project thread (SPEC.md "Project files": "The
// assistant can read a plain-text file of up to 4 MiB on request even when skipped"):
// the model calls files_read and files_search, answered from the project's files.
import t from 'tap'
import { world, type Client } from '../lib/world.ts'
import { eventually } from '../lib/wait.ts'
import { fakeProvider } from '../lib/fake-provider.ts'
import { uploadFile } from '../lib/files.ts'

const fake = await fakeProvider(t)
const { alpha, beta, olive, max, service } = await world(t, {
  worker: true, store: true,
  seed: {
    providers: [{ org: 'acme', slug: 'fake', kind: 'openai-compatible', baseUrl: fake.url, apiKey: 'sk-fake' }],
    models: [{ org: 'acme', id: 'tool-model', providerSlug: 'fake', contextWindow: 8000, maxOutputTokens: null, default: false },
      { org: 'acme', id: 'loop-model', providerSlug: 'fake', contextWindow: 8000, maxOutputTokens: null, default: false }],
  },
})

/** Sends a message asking the fake model for the listed tool calls; the settled answer's text. */
async function askFor(client: Client, thread: string, calls: { name: string; arguments: unknown }[]) {
  const sent = await client.post(`${thread}/messages`, { content: JSON.stringify({ calls }), model: 'tool-model' })
  if (sent.status !== 202) throw new Error(`${sent.status} ${sent.text}`)
  await eventually(() => client.get(`${thread}/generation`), (g) => g.body.status === 'idle')
  const reply = (await client.get(`${thread}/messages/${sent.body.replyMessageId}`)).body
  const text: string = reply.parts[0]?.text ?? ''
  return { reply, said: text.startsWith('tool said: ') ? JSON.parse(text.slice('tool said: '.length)) : text }
}

const projectThread = async (client: Client, project: string) =>
  `/api/v1/projects/${project}/threads/${(await client.post(`/api/v1/projects/${project}/threads`, {})).body.id}`

const notes = (await uploadFile(olive, alpha, 'notes.txt', 'The lighthouse keeper logs every ship.')).body.file

t.test('a skipped plain-text file is read on request', async (t) => {
  t.same(notes.indexing, { status: 'skipped' })
  const thread = await projectThread(olive, alpha)
  const { reply, said } = await askFor(olive, thread, [{ name: 'files_read', arguments: { fileId: notes.id } }])
  t.equal(reply.status, 'complete')
  t.match(said, { fileId: notes.id, name: 'notes.txt', text: 'The lighthouse keeper logs every ship.', truncated: false })
  const offered = fake.requests.at(-1).tools.map((tool: any) => tool.function.name)
  t.same(offered, ['files_read', 'files_search'], 'the project thread offers both tools')
})

t.test('without a fileId the tool lists the project\'s files', async (t) => {
  const thread = await projectThread(olive, alpha)
  const { said } = await askFor(olive, thread, [{ name: 'files_read', arguments: {} }])
  t.match(said.files, [{ fileId: notes.id, name: 'notes.txt', indexing: 'skipped' }])
})

t.test('a file of another project, a binary file and an unknown id are refused to the model', async (t) => {
  const other = (await uploadFile(olive, beta, 'secret.txt', 'beta only')).body.file
  const image = (await uploadFile(olive, alpha, 'photo.png', Buffer.from([0x89, 0x50, 0x4e, 0x47]))).body.file
  const thread = await projectThread(olive, alpha)
  t.match((await askFor(olive, thread, [{ name: 'files_read', arguments: { fileId: other.id } }])).said,
    { error: 'no such file in the project' }, 'a file of Beta from an Alpha thread')
  t.match((await askFor(olive, thread, [{ name: 'files_read', arguments: { fileId: image.id } }])).said,
    { error: /is not plain text and is not indexed/ })
  t.match((await askFor(olive, thread, [{ name: 'files_read', arguments: { fileId: 'nope' } }])).said,
    { error: 'no such file in the project' })
})

t.test('a plain-text file over 4 MiB is read only once indexed', async (t) => {
  const big = (await uploadFile(olive, alpha, 'big.txt', 'word '.repeat(4 * 1024 * 1024 / 5 + 1))).body.file
  const thread = await projectThread(olive, alpha)
  t.match((await askFor(olive, thread, [{ name: 'files_read', arguments: { fileId: big.id } }])).said,
    { error: /is over 4194304 bytes/ })
})

t.test('the search tool answers passages of the project\'s indexed files only', async (t) => {
  const tides = (await uploadFile(olive, alpha, 'tides.md', '# Tides\nSpring tides follow the full moon.', { skipRagIndexing: false })).body.file
  const hidden = (await uploadFile(olive, beta, 'tides-beta.md', '# Tides\nSpring tides in the other project.', { skipRagIndexing: false })).body.file
  for (const [project, file] of [[alpha, tides], [beta, hidden]] as const) {
    await eventually(() => olive.get(`/api/v1/projects/${project}/files/${file.id}`), (r) => r.body.file.indexing.status === 'indexed')
  }
  const thread = await projectThread(olive, alpha)
  const { said } = await askFor(olive, thread, [{ name: 'files_search', arguments: { query: 'spring tides moon' } }])
  t.equal(said.results.length, 1, 'one passage: the other project\'s file is never searched')
  t.match(said.results[0], { fileId: tides.id, name: 'tides.md', heading: 'Tides', text: /full moon/ })
})

t.test('a reader whose access is revoked mid-answer reads nothing more', async (t) => {
  const thread = await projectThread(max, alpha)
  const { reply, said } = await askFor(max, thread, [{ name: 'files_read', arguments: { fileId: notes.id } }])
  t.match(said, { text: /lighthouse/ }, 'max reads Alpha with read access')
  // The answer as it was while the worker wrote it, then the grant revoked mid-answer.
  const tool = () => service.db.owner`select app.worker_thread_tool(organization_id, id, 'files.read',
                                        ${JSON.stringify({ fileId: notes.id })}::text::jsonb) as answer
                                      from app.thread_messages where id = ${reply.id}`.then((rows) => rows[0]!.answer)
  await service.db.owner`update app.thread_messages set status = 'streaming' where id = ${reply.id}`
  t.match(await tool(), { fetch: { fileId: notes.id, name: 'notes.txt' } }, 'while the grant stands: read from the store')
  await service.db.owner`delete from app.project_access where project_id = ${alpha}
                          and user_id = (select id from app.users where email = 'max@acme.test')`
  t.same(await tool(), { error: 'the project is no longer yours to read' })
  await service.db.owner`update app.thread_messages set status = 'stopped' where id = ${reply.id}`
  t.same(await tool(), { stopped: true }, 'a stopped answer calls nothing')
})

t.test('a personal thread offers no tools, and a call the model makes anyway is not run', async (t) => {
  const thread = `/api/v1/threads/${(await olive.post('/api/v1/threads', {})).body.id}`
  const before = fake.requests.length
  const { reply, said } = await askFor(olive, thread, [{ name: 'files_read', arguments: { fileId: notes.id } }])
  t.equal(fake.requests.at(-1).tools, undefined, 'no tools offered')
  t.equal(fake.requests.length - before, 1, 'one model call: the call asked for was not answered')
  t.match(reply, { status: 'complete', finishReason: 'stop' })
  t.equal(said, '', 'the answer is the text the model gave')
})

t.test('a model that keeps calling tools is cut off after six calls', async (t) => {
  const thread = await projectThread(olive, alpha)
  const before = fake.requests.length
  const sent = await olive.post(`${thread}/messages`, { content: 'go on forever', model: 'loop-model' })
  await eventually(() => olive.get(`${thread}/generation`), (g) => g.body.status === 'idle')
  const reply = (await olive.get(`${thread}/messages/${sent.body.replyMessageId}`)).body
  t.equal(fake.requests.length - before, 6, 'six model calls')
  t.equal(fake.requests.at(-1).tools, undefined, 'the last is offered no tools')
  t.match(reply, { status: 'complete', finishReason: 'stop' })
})
