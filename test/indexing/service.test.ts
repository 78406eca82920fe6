// The indexing service on its own port: uploads indexed in the background by its own
// runner or before the answer (sync), statuses, ranked search over a labelled corpus,
// content, compare, delete, token auth, every refusal, /health and /metrics/rag. Every
// answer is checked against the service's own /openapi.json.
import t, { type Test } from 'tap'
import { PDFDocument, StandardFonts } from 'pdf-lib'
import { Validator } from '@seriousme/openapi-schema-validator'
import { freshDatabase } from '../lib/db.ts'
import { eventually } from '../lib/wait.ts'
import { rawExchange } from '../lib/raw.ts'
import { fakeProvider } from '../lib/fake-provider.ts'
import { limit } from '../../server/core/limits.ts'
import { startIndexing, uploadForm, type Answer, type IndexingClient } from './indexing-service.ts'

const METRICS_TOKEN = 'metrics-token-0123456789'
const INDEXING_TOKEN = 'indexing-token-0123456789'

const db = await freshDatabase()
t.teardown(() => db.drop())
// The service as deployed: its own runner indexes what is queued; /metrics/rag answers METRICS_TOKEN.
const service = await startIndexing(t, db.url, { METRICS_BEARER_TOKEN: METRICS_TOKEN })
// A second instance on the same database: INDEXING_TOKEN set, no metrics token, no runner.
const guarded = await startIndexing(t, db.url, { INDEXING_TOKEN }, false)
const auth = { authorization: `Bearer ${INDEXING_TOKEN}` }

const upload = (client: IndexingClient, fields: Parameters<typeof uploadForm>[0], headers: Record<string, string> = {}) =>
  client.request('POST', '/api/v1/documents/upload', { form: uploadForm(fields), headers })
const statuses = async (fileIds: string[]) => {
  const res = await service.request('POST', '/api/v1/documents/statuses', { body: { file_ids: fileIds } })
  if (res.status !== 200) throw new Error(`statuses answered ${res.status}: ${res.text}`)
  return res.body.statuses as { file_id: string; status: string; reason: string | null }[]
}
const search = (body: Record<string, unknown>) => service.request('POST', '/api/v1/search', { body })
const settled = (fileIds: string[]) => eventually(() => statuses(fileIds), (list) => list.every((s) => s.status === 'completed' || s.status === 'failed'))

function refused(t: Test, res: Answer, status: number, code: string, message?: string) {
  t.equal(res.status, status, message ?? `${status} ${code}`)
  t.equal(res.body?.code, code, `code ${code}`)
  t.type(res.body?.error, 'string', 'with an error message')
}

// A labelled corpus: each query below has one right answer.
const corpus = [
  { id: 'geo-volcano', name: 'volcano.md', text: '# Volcanoes\n\nMagma rises through the crust and erupts as lava. Basalt forms when lava cools quickly at the surface.\n' },
  { id: 'food-bread', name: 'bread.txt', text: 'Sourdough bread needs a starter of flour and water, fermented for days before baking in a hot oven.\n' },
  { id: 'sky-telescope', name: 'telescope.md', text: '# Telescopes\n\nA refracting telescope gathers starlight with lenses; mirrors serve reflecting telescopes in observatories.\n' },
  { id: 'money-interest', name: 'interest.txt', text: 'Compound interest grows savings: the interest earned each year is added to the principal of the account.\n' },
  { id: 'garden-tomato', name: 'tomato.md', text: '# Tomatoes\n\nTomato seedlings need sunlight, regular watering and a trellis as the vines climb.\n' },
]
const corpusIds = corpus.map((doc) => doc.id)

t.test('an upload is queued, and the service\'s own runner indexes it: queued, then completed', async (t) => {
  // The guarded instance has no runner: what it accepts stays queued until another runner takes it.
  const first = await upload(guarded, { file: { name: corpus[0]!.name, content: corpus[0]!.text }, file_id: corpus[0]!.id }, auth)
  t.equal(first.status, 202)
  t.same(first.body, { file_id: corpus[0]!.id, status: 'queued' })

  for (const doc of corpus.slice(1)) {
    const res = await upload(service, { file: { name: doc.name, content: doc.text }, file_id: doc.id, metadata: JSON.stringify({ topic: doc.id.split('-')[0] }) })
    t.equal(res.status, 202, `${doc.id} accepted`)
    t.same(res.body, { file_id: doc.id, status: 'queued' })
  }
  const seen = new Set<string>()
  const done = await eventually(() => statuses(corpusIds), (list) => {
    for (const s of list) seen.add(s.status)
    return list.every((s) => s.status === 'completed')
  })
  t.same(done.map((s) => s.file_id), corpusIds, 'statuses answer in the order asked')
  t.ok(done.every((s) => s.status === 'completed' && s.reason === null), 'every file completed')
  t.ok([...seen].every((status) => ['queued', 'running', 'completed'].includes(status)), `only forward states were seen: ${[...seen]}`)
})

t.test('sync=true answers the settled status; a corrupt pdf fails with a reason', async (t) => {
  const res = await upload(service, { file: { name: 'notes.md', content: '# Notes\n\nThe quarterly roadmap lists three milestones.\n' }, file_id: 'notes-1', sync: 'true' })
  t.equal(res.status, 200)
  t.match(res.body, { file_id: 'notes-1', status: 'completed', reason: null })
  t.ok(res.body.chunks >= 1, 'with its chunks counted')
  t.same(await statuses(['notes-1']), [{ file_id: 'notes-1', status: 'completed', reason: null }], 'already completed when the answer came')

  const broken = await upload(service, { file: { name: 'broken.pdf', content: '%PDF-1.7\nthis is not a pdf at all\n%%EOF' }, file_id: 'broken-pdf', sync: 'true' })
  t.equal(broken.status, 200)
  t.equal(broken.body.status, 'failed')
  t.equal(broken.body.chunks, 0)
  t.ok(typeof broken.body.reason === 'string' && broken.body.reason.length > 0, `a reason: ${broken.body.reason}`)

  // The same in the background.
  const queued = await upload(service, { file: { name: 'broken.pdf', content: 'not even a header' }, file_id: 'broken-bg' })
  t.equal(queued.status, 202)
  const [failed] = await settled(['broken-bg'])
  t.equal(failed!.status, 'failed')
  t.ok(failed!.reason, 'with a reason')

  // A file of the same file_id replaces the earlier one.
  const again = await upload(service, { file: { name: 'notes.md', content: 'Milestones moved to the autumn.' }, file_id: 'broken-bg', sync: 'true' })
  t.match(again.body, { status: 'completed', reason: null })
})

t.test('search ranks the labelled document first, a typo included', async (t) => {
  await settled(corpusIds)
  const expectations: [string, string][] = [
    ['lava eruption', 'geo-volcano'],
    ['sourdough starter', 'food-bread'],
    ['reflecting telescope', 'sky-telescope'],
    ['interest on savings', 'money-interest'],
    ['tomato trellis', 'garden-tomato'],
    // A typo no stemmer forgives: only trigram similarity finds it.
    ['obsevatories', 'sky-telescope'],
  ]
  for (const [query, expected] of expectations) {
    const res = await search({ query, file_ids: corpusIds })
    t.equal(res.status, 200, `"${query}" answers`)
    t.equal(res.body.results[0]?.file_id, expected, `"${query}" ranks ${expected} first`)
    const scores = res.body.results.map((r: { score: number }) => r.score)
    t.same(scores, [...scores].sort((a, b) => b - a), `"${query}": best first`)
    t.notOk('metadata' in (res.body.results[0] ?? {}), 'no metadata unless asked')
  }
  const typo = await db.owner`select count(*)::int as n from app.index_chunks
    where search @@ websearch_to_tsquery('english', 'obsevatories') and file_id = any(${corpusIds})`
  t.equal(typo[0]!.n, 0, 'full text alone does not find the typo')

  // Only the files named are searched.
  const narrowed = await search({ query: 'lava eruption', file_ids: ['food-bread', 'money-interest'] })
  t.ok(narrowed.body.results.every((r: { file_id: string }) => r.file_id !== 'geo-volcano'), 'a file not named is never returned')
})

t.test('file ids reach the search as written: one spelt NULL is a file', async (t) => {
  // The ids go to PostgreSQL as one comma-separated text: an id spelt NULL is text like any other.
  const res = await upload(service, { file: { name: 'null.txt', content: 'Quokkas live on Rottnest Island.\n' }, file_id: 'NULL', sync: 'true' })
  t.equal(res.status, 200, 'indexed')
  const found = await search({ query: 'quokkas', file_ids: ['NULL', ...corpusIds] })
  t.same(found.body.results.map((r: { file_id: string }) => r.file_id), ['NULL'], 'found by its id')
  t.equal((await service.request('DELETE', '/api/v1/documents/NULL')).status, 204, 'deleted again')
})

t.test('top_k and similarity_threshold are honoured', async (t) => {
  const query = 'lava or sourdough or telescope or interest or tomato'
  const all = await search({ query, file_ids: corpusIds, top_k: 100 })
  t.ok(all.body.results.length >= 5, `every matching passage: ${all.body.results.length}`)
  const two = await search({ query, file_ids: corpusIds, top_k: 2 })
  t.equal(two.body.results.length, 2, 'top_k 2 gives two')
  const defaults = await search({ query, file_ids: corpusIds })
  t.equal(defaults.body.results.length, 5, 'top_k defaults to 5')

  const scores: number[] = all.body.results.map((r: { score: number }) => r.score)
  const distinct = [...new Set(scores)].sort((a, b) => b - a)
  t.ok(distinct.length >= 2, 'the scores differ')
  const threshold = (distinct[0]! + distinct[1]!) / 2
  const above = await search({ query, file_ids: corpusIds, top_k: 100, similarity_threshold: threshold })
  t.ok(above.body.results.length >= 1, 'something passes the threshold')
  t.ok(above.body.results.length < all.body.results.length, 'the threshold leaves passages out')
  t.ok(above.body.results.every((r: { score: number }) => r.score >= threshold), 'every passage scores at least the threshold')
  const none = await search({ query: 'xylophone quartet', file_ids: corpusIds })
  t.same(none.body.results, [], 'a query matching nothing finds nothing')
})

t.test('include_metadata returns file name, page, heading, ordinal and the file\'s metadata', async (t) => {
  const pdf = await PDFDocument.create()
  const font = await pdf.embedFont(StandardFonts.Helvetica)
  pdf.addPage().drawText('Chapter one describes the harbour and its lighthouse.', { x: 50, y: 700, size: 12, font })
  pdf.addPage().drawText('Chapter two describes the glacier and its crevasses.', { x: 50, y: 700, size: 12, font })
  const bytes = await pdf.save()
  const res = await upload(service, { file: { name: 'chapters.pdf', content: bytes }, file_id: 'chapters', sync: 'true', metadata: JSON.stringify({ source: 'atlas', page: 'spoofed' }) })
  t.match(res.body, { status: 'completed' })

  const glacier = await search({ query: 'glacier crevasses', file_ids: ['chapters'], include_metadata: true })
  t.equal(glacier.status, 200)
  t.match(glacier.body.results[0], { file_id: 'chapters', metadata: { file_name: 'chapters.pdf', page: 2, source: 'atlas' } })
  t.equal(glacier.body.results[0].metadata.page, 2, 'the page is the passage\'s, not the metadata\'s')

  const lava = await search({ query: 'basalt', file_ids: corpusIds, include_metadata: true })
  t.match(lava.body.results[0], { file_id: 'geo-volcano', metadata: { file_name: 'volcano.md', heading: 'Volcanoes', page: null, ordinal: 0 } })
  const withTopic = await search({ query: 'sourdough', file_ids: corpusIds, include_metadata: true })
  t.match(withTopic.body.results[0], { file_id: 'food-bread', metadata: { file_name: 'bread.txt', topic: 'food' } })
})

t.test('content: the extracted text, null until completed, 404 for an unknown file', async (t) => {
  const res = await service.request('GET', '/api/v1/documents/food-bread/content')
  t.equal(res.status, 200)
  t.equal(res.body.status, 'completed')
  t.match(res.body.content, /Sourdough bread needs a starter/)
  const failed = await service.request('GET', '/api/v1/documents/broken-pdf/content')
  t.match(failed.body, { file_id: 'broken-pdf', status: 'failed', content: null })
  t.ok(failed.body.reason, 'the failure\'s reason')
  refused(t, await service.request('GET', '/api/v1/documents/nothing-here/content'), 404, 'FILE_NOT_FOUND')
  refused(t, await service.request('GET', '/api/v1/documents/%2Fbad/content'), 404, 'FILE_NOT_FOUND', 'a file_id no file can have')
})

t.test('compare: identical texts are similar 1; a changed section is reported', async (t) => {
  const v1 = 'Introduction\nThe contract runs for two years.\nPayment is due monthly.\nSigned in Berlin.\n'
  const v2 = 'Introduction\nThe contract runs for three years.\nPayment is due monthly.\nSigned in Berlin.\n'
  for (const [id, text] of [['contract-v1', v1], ['contract-v1-copy', v1], ['contract-v2', v2]] as const) {
    const res = await upload(service, { file: { name: `${id}.txt`, content: text }, file_id: id, sync: 'true' })
    t.equal(res.body.status, 'completed', `${id} indexed`)
  }
  const same = await service.request('POST', '/api/v1/documents/compare', { body: { file_id_a: 'contract-v1', file_id_b: 'contract-v1-copy' } })
  t.equal(same.status, 200)
  t.same(same.body, { similarity: 1, changes: [] })

  const changed = await service.request('POST', '/api/v1/documents/compare', { body: { file_id_a: 'contract-v1', file_id_b: 'contract-v2' } })
  t.equal(changed.status, 200)
  t.ok(changed.body.similarity < 1 && changed.body.similarity > 0.5, `similar, not identical: ${changed.body.similarity}`)
  t.same(changed.body.changes, [
    { type: 'removed', text: 'The contract runs for two years.', line: 2, lines: 1 },
    { type: 'added', text: 'The contract runs for three years.', line: 2, lines: 1 },
  ])

  const unknown = await service.request('POST', '/api/v1/documents/compare', { body: { file_id_a: 'contract-v1', file_id_b: 'nope' } })
  refused(t, unknown, 404, 'FILE_NOT_FOUND')
  t.same(unknown.body.data.file_ids, ['nope'])
  const notCompleted = await service.request('POST', '/api/v1/documents/compare', { body: { file_id_a: 'broken-pdf', file_id_b: 'contract-v1' } })
  refused(t, notCompleted, 404, 'FILE_NOT_FOUND', 'a failed file has no text to compare')
  refused(t, await service.request('POST', '/api/v1/documents/compare', { body: { file_id_a: 'contract-v1' } }), 400, 'INVALID_BODY')
})

t.test('delete: gone from statuses and search; unknown 404; the platform\'s rows are not the service\'s', async (t) => {
  const before = await search({ query: 'compound interest', file_ids: corpusIds })
  t.equal(before.body.results[0]?.file_id, 'money-interest')
  const res = await service.request('DELETE', '/api/v1/documents/money-interest')
  t.equal(res.status, 204)
  t.equal(res.text, '')
  t.same(await statuses(['money-interest']), [{ file_id: 'money-interest', status: 'not_found', reason: null }])
  for (const query of ['compound interest', 'savings', 'principal account']) {
    const after = await search({ query, file_ids: corpusIds, top_k: 100 })
    t.ok(after.body.results.every((r: { file_id: string }) => r.file_id !== 'money-interest'), `"${query}" never returns it`)
  }
  refused(t, await service.request('DELETE', '/api/v1/documents/money-interest'), 404, 'FILE_NOT_FOUND', 'a second delete')
  refused(t, await service.request('GET', '/api/v1/documents/money-interest/content'), 404, 'FILE_NOT_FOUND')

  // A platform row (a knowledge entry's index) is not the service's: the API reads it
  // under its policies; to the service it does not exist, and its id cannot be taken.
  const [org] = await db.owner`insert into app.organizations (slug, name) values ('acme', 'Acme') returning id`
  const [entry] = await db.owner`insert into app.knowledge_entries (organization_id, title, content)
    values (${org!.id}, 'Policy', 'Travel policy text') returning id`
  const platformId = `knowledge:${entry!.id}`
  await db.owner`insert into app.index_files (file_id, organization_id, knowledge_entry_id, file_name, status, content)
    values (${platformId}, ${org!.id}, ${entry!.id}, 'Policy', 'completed', 'Travel policy text')`
  await db.owner`insert into app.index_chunks (file_id, ordinal, organization_id, knowledge_entry_id, content, language)
    values (${platformId}, 0, ${org!.id}, ${entry!.id}, 'Travel policy text', 'english')`
  refused(t, await service.request('DELETE', `/api/v1/documents/${platformId}`), 404, 'FILE_NOT_FOUND', 'delete: not the service\'s')
  refused(t, await service.request('GET', `/api/v1/documents/${platformId}/content`), 404, 'FILE_NOT_FOUND', 'content: not the service\'s')
  t.same(await statuses([platformId]), [{ file_id: platformId, status: 'not_found', reason: null }], 'statuses: not_found')
  const found = await search({ query: 'travel policy', file_ids: [platformId] })
  t.same(found.body.results, [], 'search never returns its passages')
  refused(t, await service.request('POST', '/api/v1/documents/compare', { body: { file_id_a: platformId, file_id_b: 'geo-volcano' } }),
    404, 'FILE_NOT_FOUND', 'compare: not the service\'s')
  const replaced = await upload(service, { file: { name: 'x.txt', content: 'x' }, file_id: platformId })
  refused(t, replaced, 409, 'FILE_ID_RESERVED', 'an upload cannot take a platform id')
  refused(t, await upload(service, { file: { name: 'x.txt', content: 'x' }, file_id: 'document:anything' }), 409, 'FILE_ID_RESERVED',
    'nor any id of the platform\'s namespaces')
  const [kept] = await db.owner`select status, organization_id from app.index_files where file_id = ${platformId}`
  t.same(kept, { status: 'completed', organization_id: org!.id }, 'the platform row stays')

  // The crawler service's pages share the service's owner (no organization) in the
  // store, but are not its uploads: a search naming one never returns it.
  const [site] = await db.owner`insert into app.websites (organization_id, domain, origin, scan_interval)
    values (null, 'harbour.example', 'https://harbour.example', 3600) returning id`
  const [page] = await db.owner`insert into app.website_pages (website_id, organization_id, url, status, content, title)
    values (${site!.id}, null, 'https://harbour.example/', 'indexed', 'Harbour cranes unload freight', 'Harbour') returning id`
  const pageId = `page:${page!.id}`
  await db.owner`insert into app.index_files (file_id, organization_id, website_page_id, file_name, status, content)
    values (${pageId}, null, ${page!.id}, 'Harbour', 'completed', 'Harbour cranes unload freight')`
  await db.owner`insert into app.index_chunks (file_id, ordinal, organization_id, website_page_id, content, language)
    values (${pageId}, 0, null, ${page!.id}, 'Harbour cranes unload freight', 'english')`
  t.same((await search({ query: 'harbour cranes', file_ids: [pageId] })).body.results, [], 'a crawled page is not found by its id')
  const mixed = await search({ query: 'volcano', file_ids: [pageId, 'geo-volcano'] })
  t.same(mixed.body.results.map((r: { file_id: string }) => r.file_id), ['geo-volcano'], 'beside an upload, the upload alone')
})

t.test('with INDEXING_EMBEDDINGS_* set, uploads get vectors and search embeds the query', async (t) => {
  const provider = await fakeProvider(t)
  const embedding = await startIndexing(t, db.url, {
    INDEXING_EMBEDDINGS_URL: provider.url, INDEXING_EMBEDDINGS_MODEL: 'embed-model', INDEXING_EMBEDDINGS_API_KEY: 'sk-fake',
  }, false)
  const res = await upload(embedding, { file: { name: 'vacation.txt', content: 'Employees take their vacation days in summer.' },
    file_id: 'vectors-vacation', sync: 'true' })
  t.equal(res.body.status, 'completed')
  const [chunk] = await db.owner`select cardinality(embedding) as dimensions from app.index_chunks where file_id = 'vectors-vacation'`
  t.equal(chunk!.dimensions, 64, 'with vectors from the configured embedder')

  const embedded = () => provider.requests.filter((r) => 'input' in r).map((r) => r.input)
  const before = embedded().length
  const found = await embedding.request('POST', '/api/v1/search', { body: { query: 'vacation days', file_ids: ['vectors-vacation'] } })
  t.equal(found.body.results[0]?.file_id, 'vectors-vacation')
  t.equal(found.body.results[0]?.score, 1, 'ranked first by full text, trigrams and vectors')
  t.same(embedded().slice(before), [['vacation days']], 'the query was embedded')
  const plain = await search({ query: 'vacation days', file_ids: ['vectors-vacation'] })
  t.equal(plain.body.results[0]?.file_id, 'vectors-vacation', 'an instance without an embedder ranks by text')
  t.equal(embedded().length, before + 1, 'and embeds nothing')
})

t.test('INDEXING_TOKEN: every route but /health, /openapi.json and /docs asks for it', async (t) => {
  const body = { file_ids: ['food-bread'] }
  refused(t, await guarded.request('POST', '/api/v1/documents/statuses', { body }), 401, 'UNAUTHORIZED', 'no token')
  refused(t, await guarded.request('POST', '/api/v1/documents/statuses', { body, headers: { authorization: 'Bearer wrong-token-0123456789' } }), 401, 'UNAUTHORIZED', 'a wrong token')
  refused(t, await guarded.request('POST', '/api/v1/documents/statuses', { body, headers: { authorization: INDEXING_TOKEN } }), 401, 'UNAUTHORIZED', 'the token without Bearer')
  const ok = await guarded.request('POST', '/api/v1/documents/statuses', { body, headers: auth })
  t.equal(ok.status, 200, 'the token')
  t.equal(ok.body.statuses[0].status, 'completed')
  refused(t, await upload(guarded, { file: { name: 'a.txt', content: 'a' }, file_id: 'nope' }), 401, 'UNAUTHORIZED', 'uploads too')
  refused(t, await guarded.request('POST', '/api/v1/search', { body: { query: 'lava', file_ids: corpusIds } }), 401, 'UNAUTHORIZED', 'search too')
  refused(t, await guarded.request('GET', '/api/v1/documents/food-bread/content'), 401, 'UNAUTHORIZED', 'content too')
  refused(t, await guarded.request('DELETE', '/api/v1/documents/food-bread'), 401, 'UNAUTHORIZED', 'delete too')
  refused(t, await guarded.request('GET', '/api/v1/nowhere'), 401, 'UNAUTHORIZED', 'unknown routes too')
  t.equal((await guarded.request('GET', '/health')).status, 200, '/health is open')
  t.equal((await guarded.request('GET', '/openapi.json')).status, 200, '/openapi.json is open')
  const docs = await guarded.request('GET', '/docs')
  t.equal(docs.status, 200, '/docs is open')
  t.match(docs.headers.get('content-type'), /text\/html/)
  t.equal((await guarded.request('GET', '/docs/assets/swagger-ui-bundle.js')).status, 200, 'with its local assets')
  t.equal((await service.request('POST', '/api/v1/documents/statuses', { body })).status, 200, 'unset, the service is open')
})

t.test('uploads: every problem of the fields, listed with its path', async (t) => {
  const issues = (res: Answer) => (res.body?.data?.issues ?? []) as { path: string; message: string }[]
  const paths = (res: Answer) => issues(res).map((issue) => issue.path).sort()

  const empty = await upload(service, { sync: 'maybe' })
  refused(t, empty, 400, 'INVALID_BODY', 'no file and no file_id')
  t.same(paths(empty), ['file', 'file_id', 'sync'], 'each problem named')

  const badId = await upload(service, { file: { name: 'a.txt', content: 'a' }, file_id: '-starts-with-dash' })
  refused(t, badId, 400, 'INVALID_BODY')
  t.same(paths(badId), ['file_id'])
  const longId = await upload(service, { file: { name: 'a.txt', content: 'a' }, file_id: 'x'.repeat(256) })
  t.same(paths(longId), ['file_id'], 'a file_id over 255 characters')

  const badJson = await upload(service, { file: { name: 'a.txt', content: 'a' }, file_id: 'ok-id', metadata: '{not json' })
  refused(t, badJson, 400, 'INVALID_BODY')
  t.same(paths(badJson), ['metadata'])
  const notObject = await upload(service, { file: { name: 'a.txt', content: 'a' }, file_id: 'ok-id', metadata: '[1, 2]' })
  t.same(paths(notObject), ['metadata'], 'metadata must be an object')
  const language = await upload(service, { file: { name: 'a.txt', content: 'a' }, file_id: 'ok-id', metadata: JSON.stringify({ language: 'klingon' }) })
  refused(t, language, 400, 'INVALID_BODY', 'an unknown language')
  t.same(paths(language), ['metadata.language'])
  const several = await upload(service, { file: { name: 'a.txt', content: 'a' }, file_id: 'bad id', metadata: JSON.stringify({ language: 'klingon' }), extra: 'x' })
  t.same(paths(several), ['extra', 'file_id', 'metadata.language'], 'every problem at once, the language\'s included')
  const deep = await upload(service, { file: { name: 'a.txt', content: 'a' }, file_id: 'ok-id', metadata: '{"a":'.repeat(100) + '1' + '}'.repeat(100) })
  refused(t, deep, 400, 'INVALID_BODY', 'metadata nested too deeply')
  t.match(paths(deep)[0], /^metadata\.a\.a/)
  const nul = await upload(service, { file: { name: 'a.txt', content: 'a' }, file_id: 'ok-id', metadata: JSON.stringify({ note: 'a\u0000b' }) })
  t.same(paths(nul), ['metadata.note'], 'a NUL character in the metadata')
  const noName = await upload(service, { file: { content: 'a' }, file_id: 'ok-id' })
  t.equal(noName.status, 400)
  t.same(paths(noName), ['file'], 'a file without a filename')

  const notMultipart = await service.request('POST', '/api/v1/documents/upload', { body: { file_id: 'x' } })
  refused(t, notMultipart, 400, 'INVALID_BODY', 'JSON instead of a form')
  t.same((await statuses(['ok-id', 'bad-id']))!.map((s) => s.status), ['not_found', 'not_found'], 'nothing refused was stored')

  const german = await upload(service, { file: { name: 'tides.txt', content: 'Die Gezeiten entstehen durch die Anziehungskraft des Mondes.' }, file_id: 'tides', sync: 'true', metadata: JSON.stringify({ language: 'German' }) })
  t.equal(german.body.status, 'completed', 'a known language, any case')
  const [row] = await db.owner`select language::text from app.index_files where file_id = 'tides'`
  t.equal(row!.language, 'german', 'stored with its text search configuration')
})

t.test('uploads over indexing.uploadMaxBytes answer 413 as the bytes arrive', async (t) => {
  const limitBytes = limit('indexing.uploadMaxBytes')
  t.equal(limitBytes, 104857600)
  const { port } = new URL(service.url)
  const boundary = 'indexing-boundary'
  const head = (extra: string) => `POST /api/v1/documents/upload HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n` +
    `Content-Type: multipart/form-data; boundary=${boundary}\r\n${extra}\r\n`

  // Declared too large: refused before a byte of the body is read.
  const declared = await rawExchange(service.url, head(`Content-Length: ${limitBytes + 2 * 1024 * 1024}\r\n`), { keepOpenMs: 3000 })
  t.equal(declared.status, 413)
  const declaredBody = JSON.parse(declared.text)
  t.equal(declaredBody.code, 'BODY_TOO_LARGE')
  t.equal(declaredBody.data.limitBytes, limitBytes)

  // Streamed without a length: refused once the file passes the limit, the rest unread.
  const chunk = (data: Buffer | string) => {
    const bytes = Buffer.isBuffer(data) ? data : Buffer.from(data)
    return Buffer.concat([Buffer.from(`${bytes.length.toString(16)}\r\n`), bytes, Buffer.from('\r\n')])
  }
  const opening = `--${boundary}\r\nContent-Disposition: form-data; name="file_id"\r\n\r\nhuge\r\n` +
    `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="huge.txt"\r\nContent-Type: text/plain\r\n\r\n`
  const mebibyte = Buffer.alloc(1024 * 1024, 'a')
  const pieces = [chunk(opening), ...Array.from({ length: 140 }, () => chunk(mebibyte))]
  const streamed = await rawExchange(service.url, head('Transfer-Encoding: chunked\r\n'), { chunks: pieces, gapMs: 2, keepOpenMs: 20_000 })
  t.equal(streamed.status, 413, 'refused while streaming')
  t.equal(streamed.headers.connection, 'close')
  const body = JSON.parse(streamed.text)
  t.equal(body.code, 'BODY_TOO_LARGE')
  t.equal(body.data.limitBytes, limitBytes)
  t.same((await statuses(['huge']))[0]!.status, 'not_found', 'nothing was stored')
})

t.test('JSON bodies: every problem with its path', async (t) => {
  const paths = (res: Answer) => ((res.body?.data?.issues ?? []) as { path: string }[]).map((issue) => issue.path).sort()
  const broken = await service.request('POST', '/api/v1/documents/statuses', { raw: '{"file_ids": [', headers: { 'content-type': 'application/json' } })
  refused(t, broken, 400, 'INVALID_BODY', 'not JSON')
  t.ok(broken.body.data.issues.length >= 1, 'with an issue')
  refused(t, await service.request('POST', '/api/v1/documents/statuses', { raw: '' }), 400, 'INVALID_BODY', 'an empty body')
  const empty = await service.request('POST', '/api/v1/documents/statuses', { body: { file_ids: [] } })
  refused(t, empty, 400, 'INVALID_BODY', 'no file ids')
  t.same(paths(empty), ['file_ids'])
  const many = await service.request('POST', '/api/v1/documents/statuses', { body: { file_ids: Array.from({ length: 1001 }, (_, i) => `f${i}`) } })
  refused(t, many, 400, 'INVALID_BODY', 'over 1000 file ids')
  const badIds = await service.request('POST', '/api/v1/documents/statuses', { body: { file_ids: ['ok', 'not ok', 7], extra: true } })
  t.same(paths(badIds), ['extra', 'file_ids.1', 'file_ids.2'], 'each bad id and the unknown key')

  const searchIssues = await search({ query: '', top_k: 0, similarity_threshold: 2, include_metadata: 'yes' })
  refused(t, searchIssues, 400, 'INVALID_BODY')
  t.same(paths(searchIssues), ['file_ids', 'include_metadata', 'query', 'similarity_threshold', 'top_k'], 'every field\'s problem')
  t.same(paths(await search({ query: 'x'.repeat(2001), file_ids: ['a'], top_k: 101 })), ['query', 'top_k'], 'the upper bounds')
  t.same(paths(await search({ query: '   ', file_ids: ['a'] })), ['query'], 'a blank query')
  t.same(paths(await search({ query: 'nul \u0000 byte', file_ids: ['a'] })), ['query'], 'a NUL character')
  const language = await search({ query: 'lava', file_ids: corpusIds, language: 'klingon' })
  refused(t, language, 400, 'INVALID_BODY', 'an unknown language')
  t.same(paths(language), ['language'])
  const german = await search({ query: 'Gezeit', file_ids: ['tides'], language: 'german' })
  t.equal(german.body.results[0]?.file_id, 'tides', 'a known language')
  t.same(paths(await service.request('POST', '/api/v1/search', { raw: '[1,2]', headers: { 'content-type': 'application/json' } })), [''], 'an array body')
})

t.test('unknown routes 404, other verbs 405', async (t) => {
  refused(t, await service.request('GET', '/api/v1/nowhere'), 404, 'NOT_FOUND')
  refused(t, await service.request('POST', '/nothing/here', { body: {} }), 404, 'NOT_FOUND')
  const verb = await service.request('GET', '/api/v1/search')
  refused(t, verb, 405, 'METHOD_NOT_ALLOWED')
  t.equal(verb.headers.get('allow'), 'POST')
  refused(t, await service.request('PUT', '/api/v1/documents/food-bread'), 405, 'METHOD_NOT_ALLOWED')
})

t.test('the OpenAPI document is valid and describes every operation', async (t) => {
  const res = await service.request('GET', '/openapi.json')
  const result = await new Validator().validate(res.body)
  t.ok(result.valid, `valid OpenAPI 3.1: ${JSON.stringify(result.errors ?? []).slice(0, 1500)}`)
  const operations = Object.entries(res.body.paths as Record<string, Record<string, unknown>>)
    .flatMap(([path, methods]) => Object.keys(methods).map((method) => `${method.toUpperCase()} ${path}`)).sort()
  t.same(operations, [
    'DELETE /api/v1/documents/{file_id}', 'GET /api/v1/documents/{file_id}/content', 'GET /docs', 'GET /health',
    'GET /metrics/rag', 'GET /openapi.json', 'POST /api/v1/documents/compare', 'POST /api/v1/documents/statuses',
    'POST /api/v1/documents/upload', 'POST /api/v1/search',
  ])
  t.equal(res.body.info['x-tale-limits']['indexing.uploadMaxBytes'], limit('indexing.uploadMaxBytes'))
})

t.test('/metrics/rag: 401 while METRICS_BEARER_TOKEN is unset or not sent; counts when it is', async (t) => {
  refused(t, await guarded.request('GET', '/metrics/rag', { headers: { authorization: `Bearer ${METRICS_TOKEN}` } }), 401, 'UNAUTHORIZED', 'unset: 401 whatever is sent')
  refused(t, await guarded.request('GET', '/metrics/rag', { headers: auth }), 401, 'UNAUTHORIZED', 'the indexing token is not the metrics token')
  refused(t, await service.request('GET', '/metrics/rag'), 401, 'UNAUTHORIZED', 'no token')
  refused(t, await service.request('GET', '/metrics/rag', { headers: { authorization: 'Bearer metrics-token-wrong-0000' } }), 401, 'UNAUTHORIZED', 'a wrong token')
  const res = await service.request('GET', '/metrics/rag', { headers: { authorization: `Bearer ${METRICS_TOKEN}` } })
  t.equal(res.status, 200)
  t.match(res.headers.get('content-type'), /^text\/plain/)
  const value = (pattern: string) => Number(new RegExp(`^${pattern} (\\S+)$`, 'm').exec(res.text)?.[1] ?? NaN)
  t.ok(value('rag_documents_indexed_total\\{outcome="completed"\\}') >= corpus.length + 3, 'completed files counted')
  t.ok(value('rag_documents_indexed_total\\{outcome="failed"\\}') >= 2, 'failed files counted')
  t.ok(value('rag_uploads_total\\{mode="background"\\}') >= corpus.length - 1, 'background uploads counted')
  t.ok(value('rag_uploads_total\\{mode="sync"\\}') >= 5, 'sync uploads counted')
  t.ok(value('rag_searches_total') >= 10, 'searches counted')
  t.ok(value('rag_search_duration_seconds_count') >= 10, 'search durations observed')
  t.equal(value('rag_index_queue_depth\\{status="queued"\\}'), 0, 'nothing queued now')
  await db.owner`update app.index_files set status = 'queued' where file_id = 'tides'`
  const later = await service.request('GET', '/metrics/rag', { headers: { authorization: `Bearer ${METRICS_TOKEN}` } })
  t.match(later.text, /^rag_index_queue_depth\{status="queued"\} 1$/m, 'the queue depth is read at the scrape')
  await db.owner`update app.index_files set status = 'completed' where file_id = 'tides'`
})

t.test('/health: 200 while the database answers, 503 once it does not', async (t) => {
  const ok = await service.request('GET', '/health')
  t.equal(ok.status, 200)
  t.same(ok.body, { status: 'ok' })
  await guarded.close()
  await db.cutOff()
  const down = await service.request('GET', '/health')
  t.equal(down.status, 503)
  t.same(down.body, { status: 'unavailable' })
})
