// The project endpoints over real HTTP: create, list and lookup, update (archive,
// restore, rename, describe, externalItemId), delete (legal hold, modes, the cascade
// budget), with every refusal checked by status and code.
import t, { type Test } from 'tap'
import type { Response } from '../lib/service.ts'
import { acme } from '../lib/fixtures.ts'
import { project, world, type Client } from '../lib/world.ts'
import { refused } from '../lib/assert.ts'
import { pinClock } from '../lib/db.ts'
import type { SeedFile } from '../../server/admin/operations.ts'

const KEY_SHAPE = /^[A-Z][A-Z0-9]{1,5}$/

const names = (res: Response): string[] => res.body.projects.map((p: { name: string }) => p.name)
const ids = (res: Response): string[] => res.body.projects.map((p: { id: string }) => p.id)

/** Creates projects one request at a time, so each has its own createdAt. */
async function createAll(t: Test, client: Client, list: string[]): Promise<string[]> {
  const created: string[] = []
  for (const name of list) {
    const res = await client.post('/api/v1/projects', { name })
    t.equal(res.status, 201, `created ${name}`)
    created.push(res.body.project.id)
  }
  return created
}

/** Follows continueCursor until isDone; returns every page. */
async function allPages(t: Test, client: Client, query: string): Promise<Response[]> {
  const pages: Response[] = []
  let cursor: string | null = null
  for (let i = 0; i < 200; i++) {
    const sep = query ? '&' : ''
    const res = await client.get(`/api/v1/projects?${query}${cursor === null ? '' : `${sep}cursor=${encodeURIComponent(cursor)}`}`)
    t.equal(res.status, 200, `page ${i + 1} answers 200`)
    pages.push(res)
    if (res.body.isDone) break
    cursor = res.body.continueCursor
  }
  return pages
}

function flip(token: string, at: number): string {
  const c = token[at]!
  const replacement = c === 'A' ? 'B' : 'A'
  return token.slice(0, at) + replacement + token.slice(at + 1)
}

t.test('POST creates a project: 201, {project} with its fields, Location, version and request-id headers', async (t) => {
  const { as } = await world(t, { projects: [] })
  const res = await as('olive@acme.test').post('/api/v1/projects', {
    name: '  Launch Plan  ', key: 'ab12', description: 'The plan', externalItemId: 'crm-1',
  })
  t.equal(res.status, 201)
  const p = res.body.project
  t.type(p.id, 'string')
  t.equal(res.headers.get('location'), `/api/v1/projects/${p.id}`)
  t.equal(p.name, 'Launch Plan', 'name is trimmed')
  t.equal(p.key, 'AB12', 'explicit key stored uppercase')
  t.equal(p.description, 'The plan')
  t.equal(p.externalItemId, 'crm-1')
  t.notOk('archivedAt' in p, 'an active project has no archivedAt')
  t.type(p.createdAt, 'number')
  t.type(p.updatedAt, 'number')
  t.same(Object.keys(res.body), ['project'], 'body is {project}')
  t.ok(res.headers.get('x-service-api-version'), 'version header on a write')
  t.ok(res.headers.get('x-request-id'), 'request id on a write')
})

t.test('POST without description or externalItemId stores both as null', async (t) => {
  const { as } = await world(t, { projects: [] })
  const minimal = await as('olive@acme.test').post('/api/v1/projects', { name: 'Bare' })
  t.equal(minimal.status, 201)
  t.equal(minimal.body.project.description, null, 'description defaults to null')
  t.equal(minimal.body.project.externalItemId, null, 'externalItemId defaults to null')
})

t.test('POST trims every kind of surrounding white space from the name and externalItemId, keeping inner space', async (t) => {
  const { as } = await world(t, { projects: [] })
  const spaced = await as('olive@acme.test').post('/api/v1/projects', { name: '\t Tabbed\u00a0Name \n', externalItemId: '\tcrm-2\r\n' })
  t.equal(spaced.status, 201)
  t.equal(spaced.body.project.name, 'Tabbed\u00a0Name', 'every kind of surrounding white space is trimmed, inner kept')
  t.equal(spaced.body.project.externalItemId, 'crm-2', 'externalItemId is trimmed of tabs and line breaks too')

  const listed = await as('olive@acme.test').get('/api/v1/projects')
  t.same(names(listed), ['Tabbed\u00a0Name'], 'the list shows the trimmed name')
})

t.test('POST body refusals', async (t) => {
  const { as } = await world(t, { projects: [] })
  const olive = as('olive@acme.test')
  t.test('POST refuses a blank, missing or non-string name with 400 INVALID_BODY and writes nothing', async (t) => {
    refused(t, await olive.post('/api/v1/projects', { name: '' }), 400, 'INVALID_BODY', 'empty name')
    refused(t, await olive.post('/api/v1/projects', { name: '   \t ' }), 400, 'INVALID_BODY', 'whitespace-only name')
    refused(t, await olive.post('/api/v1/projects', { name: '\n\u3000\u00a0' }), 400, 'INVALID_BODY', 'unicode-space-only name')
    refused(t, await olive.post('/api/v1/projects', {}), 400, 'INVALID_BODY', 'missing name')
    refused(t, await olive.post('/api/v1/projects', { name: 42 }), 400, 'INVALID_BODY', 'non-string name')
    refused(t, await olive.post('/api/v1/projects'), 400, 'INVALID_BODY', 'no body')
    t.same((await olive.get('/api/v1/projects?archived=include')).body.projects, [], 'no refused create wrote a project')
  })

  t.test('POST refuses an unknown body key with 400 INVALID_BODY naming it in data.issues', async (t) => {
    const unknown = await olive.post('/api/v1/projects', { name: 'Ok', color: 'red' })
    refused(t, unknown, 400, 'INVALID_BODY', 'unknown key')
    t.ok(unknown.body.data.issues.some((i: { path: string; message: string }) => i.path === 'color' || i.message.includes('color')),
      'data.issues names the unknown key')
    refused(t, await olive.post('/api/v1/projects', { name: 'Keyed', projectId: 'x' }), 400, 'INVALID_BODY', 'body projectId')
    t.same((await olive.get('/api/v1/projects?archived=include')).body.projects, [], 'no refused create wrote a project')
  })
})

t.test('POST refuses a key that is not a letter then 1-5 letters or digits, and stores a valid one uppercase', async (t) => {
  const { as } = await world(t, { projects: [] })
  const olive = as('olive@acme.test')
  for (const key of ['A', 'a', '1ab', '12', 'ABCDEFG', 'a-b', 'ab cd', 'É1', '', '  ']) {
    refused(t, await olive.post('/api/v1/projects', { name: 'Keyed', key }), 400, 'INVALID_BODY', `invalid key ${JSON.stringify(key)}`)
  }
  t.same((await olive.get('/api/v1/projects?archived=include')).body.projects, [], 'no refused create wrote a project')

  for (const [sent, stored] of [['ab', 'AB'], ['Zz9', 'ZZ9'], ['q12345', 'Q12345']] as const) {
    const res = await olive.post('/api/v1/projects', { name: `Key ${sent}`, key: sent })
    t.equal(res.status, 201)
    t.equal(res.body.project.key, stored, `key ${sent} is stored as ${stored}`)
  }
})

t.test('POST refuses a blank externalItemId with 400 INVALID_BODY', async (t) => {
  const { as } = await world(t, { projects: [] })
  const olive = as('olive@acme.test')
  refused(t, await olive.post('/api/v1/projects', { name: 'Keyed', externalItemId: '   ' }), 400, 'INVALID_BODY', 'blank externalItemId')
  t.same((await olive.get('/api/v1/projects?archived=include')).body.projects, [], 'no refused create wrote a project')
})

/** Creates a project by name and returns its key. */
const keyFor = (t: Test, client: Client) => async (name: string) => {
  const res = await client.post('/api/v1/projects', { name })
  t.equal(res.status, 201, `created ${name}`)
  return res.body.project.key as string | null
}

t.test('POST derives a key from the name when none is sent: the word, or the initials, folded and cut to six', async (t) => {
  const { as } = await world(t, { projects: [] })
  const keyOf = keyFor(t, as('olive@acme.test'))
  t.equal(await keyOf('Alpha'), 'ALPHA', 'one word: the word itself')
  t.equal(await keyOf('Sales Pipeline'), 'SP', 'several words: the initials')
  t.equal(await keyOf('Café'), 'CAFE', 'accents folded')
  t.equal(await keyOf('Évènement Général'), 'EG', 'accented initials folded')
  t.equal(await keyOf('Marketing'), 'MARKET', 'a long word is cut to six characters')
})

t.test('POST re-derives a derived key that collides, so every key stays unique in the organization', async (t) => {
  const { as } = await world(t, { projects: [] })
  const olive = as('olive@acme.test')
  const keyOf = keyFor(t, olive)
  t.equal(await keyOf('Alpha'), 'ALPHA')
  t.equal(await keyOf('Marketing'), 'MARKET')
  const second = await keyOf('Alpha')
  t.match(second, KEY_SHAPE, 'a derived collision is re-derived into a valid key')
  t.not(second, 'ALPHA', 'the re-derived key differs from the taken one')
  const third = await keyOf('Alpha')
  t.match(third, KEY_SHAPE)
  t.not(third, 'ALPHA')
  t.not(third, second, 'a third collision gets yet another key')
  const marketing2 = await keyOf('Marketing')
  t.match(marketing2, KEY_SHAPE, 'a six-character base re-derives within six characters')
  t.not(marketing2, 'MARKET')

  const listed = await olive.get('/api/v1/projects')
  const keys = listed.body.projects.map((p: { key: string | null }) => p.key).filter((k: string | null) => k !== null)
  t.equal(new Set(keys).size, keys.length, 'every key is unique in the organization')
})

t.test('POST leaves a project keyless when its name has fewer than two ASCII letters to derive from', async (t) => {
  const { as } = await world(t, { projects: [] })
  const keyOf = keyFor(t, as('olive@acme.test'))
  t.equal(await keyOf('123'), null, 'digits only: keyless')
  t.equal(await keyOf('日本'), null, 'no ASCII letters: keyless')
  t.equal(await keyOf('日本'), null, 'two keyless projects do not collide')
  t.equal(await keyOf('X'), null, 'one letter is too short: keyless')
})

t.test('POST refuses an explicit key already taken with 409 PROJECT_KEY_TAKEN, even by an invisible project', async (t) => {
  const { as } = await world(t, { projects: [project('Secret', { key: 'SEC' })] })
  const eddie = as('eddie@acme.test')
  t.same((await eddie.get('/api/v1/projects')).body.projects, [], 'eddie cannot see Secret')
  refused(t, await eddie.post('/api/v1/projects', { name: 'Mine', key: 'sec' }), 409, 'PROJECT_KEY_TAKEN', 'explicit key taken by an invisible project')
  refused(t, await as('olive@acme.test').post('/api/v1/projects', { name: 'Mine', key: 'SEC' }), 409, 'PROJECT_KEY_TAKEN', 'explicit key taken')
  t.same((await eddie.get('/api/v1/projects')).body.projects, [], 'the refused create wrote nothing')
})

t.test('POST re-derives a derived key that collides with an invisible project', async (t) => {
  const { as } = await world(t, { projects: [project('Secret', { key: 'SEC' })] })
  const derived = await as('eddie@acme.test').post('/api/v1/projects', { name: 'Sec' })
  t.equal(derived.status, 201, 'a derived key that collides with an invisible project is re-derived')
  t.match(derived.body.project.key, KEY_SHAPE)
  t.not(derived.body.project.key, 'SEC')
})

t.test('POST keys are unique per organization: another organization may use the same key', async (t) => {
  const { as } = await world(t, { projects: [project('Secret', { key: 'SEC' })] })
  const other = await as('gina@globex.test').post('/api/v1/projects', { name: 'Elsewhere', key: 'SEC' })
  t.equal(other.status, 201, 'another organization may use the same key')
  t.equal(other.body.project.key, 'SEC')
})

t.test('POST stores externalItemId trimmed and NFC-normalized, found by lookup in either form', async (t) => {
  const { as } = await world(t, { projects: [] })
  const olive = as('olive@acme.test')
  const created = await olive.post('/api/v1/projects', { name: 'Accent', externalItemId: '  e\u0301  ' })
  t.equal(created.status, 201)
  t.equal(created.body.project.externalItemId, '\u00e9', 'stored trimmed and composed')
  const found = await olive.get(`/api/v1/projects?externalItemId=${encodeURIComponent('\u00e9')}`)
  t.equal(found.status, 200)
  t.same(ids(found), [created.body.project.id], 'lookup by the composed form finds it')
  const foundDecomposed = await olive.get(`/api/v1/projects?externalItemId=${encodeURIComponent(' e\u0301')}`)
  t.same(ids(foundDecomposed), [created.body.project.id], 'lookup by the decomposed, padded form finds it')
})

t.test('POST refuses a duplicate externalItemId in any normal form with 409, data.key naming the holder', async (t) => {
  const { as } = await world(t, { projects: [] })
  const olive = as('olive@acme.test')
  const created = await olive.post('/api/v1/projects', { name: 'Accent', externalItemId: '  e\u0301  ' })
  t.equal(created.status, 201)
  const key = created.body.project.key
  const dup = await olive.post('/api/v1/projects', { name: 'Other', externalItemId: '\u00e9' })
  refused(t, dup, 409, 'PROJECT_DUPLICATE_EXTERNAL_ID', 'duplicate externalItemId')
  t.equal(dup.body.data.key, key, 'data.key names the existing project\'s key')
  const dupDecomposed = await olive.post('/api/v1/projects', { name: 'Other', externalItemId: 'e\u0301 ' })
  refused(t, dupDecomposed, 409, 'PROJECT_DUPLICATE_EXTERNAL_ID', 'duplicate in another normal form')
  t.equal(dupDecomposed.body.data.key, key)
})

t.test('POST refuses the externalItemId of a project the caller cannot see, and writes nothing', async (t) => {
  const { as } = await world(t, { projects: [project('Hidden', { key: 'HID', externalItemId: 'hidden-1' })] })
  const eddie = as('eddie@acme.test')
  const hidden = await eddie.post('/api/v1/projects', { name: 'Mine', externalItemId: 'hidden-1' })
  refused(t, hidden, 409, 'PROJECT_DUPLICATE_EXTERNAL_ID', 'duplicate of an invisible project')
  t.equal(hidden.body.data.key, 'HID')
  t.same((await eddie.get('/api/v1/projects')).body.projects, [], 'the refused create wrote nothing')
})

t.test('externalItemId is unique per organization: another may use it, and its lookup stays inside', async (t) => {
  const { as } = await world(t, { projects: [project('Accent', { externalItemId: '\u00e9' })] })
  const globex = await as('gina@globex.test').post('/api/v1/projects', { name: 'Accent', externalItemId: '\u00e9' })
  t.equal(globex.status, 201, 'another organization may use the same externalItemId')
  const own = await as('gina@globex.test').get(`/api/v1/projects?externalItemId=${encodeURIComponent('\u00e9')}`)
  t.same(ids(own), [globex.body.project.id], 'lookup stays inside the organization')
})

t.test('POST by a Member is refused with 403 ROLE_FORBIDDEN and writes nothing', async (t) => {
  const { as } = await world(t, { projects: [] })
  refused(t, await as('max@acme.test').post('/api/v1/projects', { name: 'Nope' }), 403, 'ROLE_FORBIDDEN', 'member creates')
  t.same((await as('olive@acme.test').get('/api/v1/projects')).body.projects, [], 'nothing written')
})

t.test('POST by a Developer or an Editor creates, and the creator alone gets edit access', async (t) => {
  const { as } = await world(t, { projects: [] })
  t.equal((await as('dev@acme.test').post('/api/v1/projects', { name: 'Dev Work' })).status, 201, 'developer creates')

  const eddie = as('eddie@acme.test')
  const created = await eddie.post('/api/v1/projects', { name: 'Editor Work' })
  t.equal(created.status, 201, 'editor creates')
  const id = created.body.project.id
  t.same(names(await eddie.get('/api/v1/projects')), ['Editor Work'], 'the creator sees their project and only it')
  const renamed = await eddie.patch(`/api/v1/projects/${id}`, { name: 'Editor Work 2', description: 'mine' })
  t.equal(renamed.status, 200, 'the creator can change it')
  t.equal(renamed.body.project.name, 'Editor Work 2')
  t.equal(renamed.body.project.description, 'mine')
  t.same((await as('max@acme.test').get('/api/v1/projects')).body.projects, [], 'the member sees none of them')
})

/** One, Two, Three and Four created in order; Two and Four archived. */
async function fourProjects(t: Test) {
  const { as } = await world(t, { projects: [] })
  const olive = as('olive@acme.test')
  const [one, two, three, four] = await createAll(t, olive, ['One', 'Two', 'Three', 'Four'])
  t.equal((await olive.patch(`/api/v1/projects/${two}`, { archived: true })).status, 200)
  t.equal((await olive.patch(`/api/v1/projects/${four}`, { archived: true })).status, 200)
  return { olive, one: one!, two: two!, three: three!, four: four! }
}

t.test('GET lists, over One, Two, Three and Four, with Two and Four archived', async (t) => {
  const { olive, one, two, three, four } = await fourProjects(t)
  t.test('GET lists active projects newest first in one page, hiding archived ones by default', async (t) => {
    const active = await olive.get('/api/v1/projects')
    t.equal(active.status, 200)
    t.same(ids(active), [three, one], 'archived hidden by default, newest first')
    t.equal(active.body.isDone, true)
    t.equal(active.body.continueCursor, '')
    t.notOk('cursor' in active.body, 'a single page carries no deprecated cursor')
    t.ok(active.headers.get('etag'), 'a read carries an ETag')
    t.ok(active.body.projects.every((p: object) => !('archivedAt' in p)), 'active rows carry no archivedAt')
  })

  t.test('GET archived=include lists every project, archived=only the archived ones with archivedAt', async (t) => {
    const included = await olive.get('/api/v1/projects?archived=include')
    t.same(ids(included), [four, three, two, one], 'archived=include lists everything newest first')
    const only = await olive.get('/api/v1/projects?archived=only')
    t.same(ids(only), [four, two], 'archived=only lists the archived ones')
    t.ok(only.body.projects.every((p: { archivedAt?: number }) => typeof p.archivedAt === 'number'), 'archived rows carry archivedAt')
  })
})

t.test('GET refuses an unknown or blank archived value with 400 INVALID_QUERY', async (t) => {
  const { as } = await world(t, { projects: [] })
  const olive = as('olive@acme.test')
  refused(t, await olive.get('/api/v1/projects?archived=all'), 400, 'INVALID_QUERY', 'unknown archived value')
  refused(t, await olive.get('/api/v1/projects?archived='), 400, 'INVALID_QUERY', 'blank archived')
})

t.test('GET keyset paging: continueCursor until isDone, no duplicates, no gaps, deprecated cursor alongside', async (t) => {
  const { as } = await world(t, { projects: [] })
  const olive = as('olive@acme.test')
  const created = await createAll(t, olive, ['P1', 'P2', 'P3', 'P4', 'P5', 'P6', 'P7'])
  const pages = await allPages(t, olive, 'limit=3')
  t.equal(pages.length, 3, '7 rows at 3 a page: 3 pages')
  t.same(pages.map((p) => p.body.projects.length), [3, 3, 1])
  t.same(pages.flatMap(ids), [...created].reverse(), 'every project once, newest first')
  for (const page of pages.slice(0, -1)) {
    t.equal(page.body.isDone, false)
    t.type(page.body.continueCursor, 'string')
    t.not(page.body.continueCursor, '')
    t.equal(page.body.cursor, page.body.continueCursor, 'the deprecated cursor equals continueCursor')
  }
  const last = pages.at(-1)!
  t.equal(last.body.isDone, true)
  t.equal(last.body.continueCursor, '', 'the last page has an empty continueCursor')
  t.notOk('cursor' in last.body, 'the last page has no deprecated cursor')

  const exact = await allPages(t, olive, 'limit=7')
  t.equal(exact.length, 1, 'a limit equal to the row count is one page')
  t.equal(exact[0]!.body.isDone, true)
  t.equal(exact[0]!.body.continueCursor, '')

  const archivedPages = await allPages(t, olive, 'archived=include&limit=4')
  t.same(archivedPages.flatMap(ids), [...created].reverse(), 'paging with archived=include')
})

t.test('GET keyset paging over rows created in the same instant', async (t) => {
  // Seeded in one transaction: every row shares createdAt, so the id breaks ties.
  const seeded = Array.from({ length: 12 }, (_, i) => project(`Same ${i}`))
  const { as, projects } = await world(t, { projects: seeded })
  const olive = as('olive@acme.test')
  const pages = await allPages(t, olive, 'limit=5')
  t.same(pages.map((p) => p.body.projects.length), [5, 5, 2])
  const seen = pages.flatMap(ids)
  t.equal(new Set(seen).size, seen.length, 'no duplicates')
  t.same([...seen].sort(), Object.values(projects).sort(), 'no gaps')
  t.same(seen, ids(await olive.get('/api/v1/projects?limit=100')), 'pages concatenate to the one-page order')
})

/** Three projects and the cursor after the first of them. */
async function cursorWorld(t: Test) {
  const w = await world(t, { projects: [] })
  const olive = w.as('olive@acme.test')
  await createAll(t, olive, ['C1', 'C2', 'C3'])
  const first = await olive.get('/api/v1/projects?limit=1')
  const cursor: string = first.body.continueCursor
  t.ok(cursor, 'a cursor was issued')
  return { ...w, olive, cursor }
}

t.test('GET cursor refusals, over three projects and a cursor after the first', async (t) => {
  const { as, olive, cursor } = await cursorWorld(t)
  t.test('GET refuses an empty cursor with 400 INVALID_QUERY', async (t) => {
    t.equal((await olive.get(`/api/v1/projects?limit=1&cursor=${encodeURIComponent(cursor)}`)).status, 200, 'the cursor itself works')
    refused(t, await olive.get('/api/v1/projects?cursor='), 400, 'INVALID_QUERY', 'empty cursor')
    refused(t, await olive.get('/api/v1/projects?limit=1&cursor='), 400, 'INVALID_QUERY', 'empty cursor with limit')
  })

  t.test('GET refuses a tampered or malformed cursor with 400 INVALID_CURSOR', async (t) => {
    refused(t, await olive.get(`/api/v1/projects?cursor=${encodeURIComponent(flip(cursor, 5))}`), 400, 'INVALID_CURSOR', 'payload tampered')
    refused(t, await olive.get(`/api/v1/projects?cursor=${encodeURIComponent(flip(cursor, cursor.length - 3))}`), 400, 'INVALID_CURSOR', 'signature tampered')
    refused(t, await olive.get('/api/v1/projects?cursor=not-a-cursor'), 400, 'INVALID_CURSOR', 'garbage')
    refused(t, await olive.get(`/api/v1/projects?cursor=${encodeURIComponent(cursor + '.x')}`), 400, 'INVALID_CURSOR', 'extra segment')
  })

  t.test('GET refuses a cursor issued to another user or organization with 400 INVALID_CURSOR', async (t) => {
    refused(t, await as('adam@acme.test').get(`/api/v1/projects?cursor=${encodeURIComponent(cursor)}`), 400, 'INVALID_CURSOR',
      'another user\'s cursor, though they see the same rows')
    refused(t, await as('gina@globex.test').get(`/api/v1/projects?cursor=${encodeURIComponent(cursor)}`), 400, 'INVALID_CURSOR',
      'a cursor from another organization')
  })

  t.test('GET refuses a cursor issued for another archived filter with 400 INVALID_CURSOR', async (t) => {
    refused(t, await olive.get(`/api/v1/projects?archived=include&cursor=${encodeURIComponent(cursor)}`), 400, 'INVALID_CURSOR',
      'a cursor issued for another archived filter')
    const includeCursor = (await olive.get('/api/v1/projects?archived=include&limit=1')).body.continueCursor
    refused(t, await olive.get(`/api/v1/projects?archived=only&cursor=${encodeURIComponent(includeCursor)}`), 400, 'INVALID_CURSOR',
      'include cursor under only')
    refused(t, await olive.get(`/api/v1/projects?cursor=${encodeURIComponent(includeCursor)}`), 400, 'INVALID_CURSOR',
      'include cursor under the default filter')
  })
})

t.test('GET clamps limit at 100, however large the number', async (t) => {
  const seeded = Array.from({ length: 105 }, (_, i) => project(`Bulk ${i}`))
  const { as } = await world(t, { projects: seeded })
  const olive = as('olive@acme.test')
  const clamped = await olive.get('/api/v1/projects?limit=500')
  t.equal(clamped.status, 200)
  t.equal(clamped.body.projects.length, 100, 'limit above the ceiling is clamped to 100')
  t.equal(clamped.body.isDone, false)
  const rest = await olive.get(`/api/v1/projects?limit=500&cursor=${encodeURIComponent(clamped.body.continueCursor)}`)
  t.equal(rest.body.projects.length, 5)
  t.equal(rest.body.isDone, true)

  for (const limit of ['10000000000', '99999999999999999999']) {
    const huge = await olive.get(`/api/v1/projects?limit=${limit}`)
    t.equal(huge.status, 200, `limit=${limit} is clamped too`)
    t.equal(huge.body.projects?.length, 100)
  }
})

t.test('GET refuses a limit that is not one positive integer with 400 INVALID_QUERY', async (t) => {
  const { as } = await world(t, { projects: [project('One'), project('Two')] })
  const olive = as('olive@acme.test')
  const small = await olive.get('/api/v1/projects?limit=1')
  t.equal(small.body.projects.length, 1)
  for (const limit of ['0', 'abc', '-1', '1.5', '1e2']) {
    refused(t, await olive.get(`/api/v1/projects?limit=${limit}`), 400, 'INVALID_QUERY', `limit=${limit}`)
  }
  refused(t, await olive.get('/api/v1/projects?limit='), 400, 'INVALID_QUERY', 'blank limit')
  refused(t, await olive.get('/api/v1/projects?limit=2&limit=3'), 400, 'INVALID_QUERY', 'repeated limit')
})

t.test('project routes refuse an unknown query parameter, and any on a write, with 400 INVALID_QUERY', async (t) => {
  const { as } = await world(t, { projects: [] })
  const olive = as('olive@acme.test')
  refused(t, await olive.get('/api/v1/projects?sort=name'), 400, 'INVALID_QUERY', 'unknown query parameter')
  refused(t, await olive.post('/api/v1/projects?dryRun=1', { name: 'Q' }), 400, 'INVALID_QUERY', 'a write with a query parameter')
})

const lookupProjects = () => [
  project('Linked', { externalItemId: 'ext-1', access: [{ email: 'max@acme.test', level: 'read' }] }),
  project('Shelved', { externalItemId: 'ext-2' }),
  project('Unlinked'),
]

t.test('GET externalItemId lookup, over Linked (max reads), Shelved and Unlinked', async (t) => {
  const { as, projects } = await world(t, { projects: lookupProjects() })
  const olive = as('olive@acme.test')
  t.test('GET externalItemId lookup answers one project or an empty page, never 404', async (t) => {
    const hit = await olive.get('/api/v1/projects?externalItemId=ext-1')
    t.equal(hit.status, 200)
    t.same(Object.keys(hit.body).sort(), ['continueCursor', 'isDone', 'projects'])
    t.same(ids(hit), [projects.Linked!])
    t.equal(hit.body.isDone, true)
    t.equal(hit.body.continueCursor, '')

    const miss = await olive.get('/api/v1/projects?externalItemId=nope')
    t.equal(miss.status, 200)
    t.same(miss.body, { projects: [], isDone: true, continueCursor: '' }, 'a miss is an empty page, not 404')
  })

  t.test('GET externalItemId lookup finds only projects the caller can see, in the caller\'s organization', async (t) => {
    t.same(ids(await as('max@acme.test').get('/api/v1/projects?externalItemId=ext-1')), [projects.Linked!], 'a reader finds it')
    t.same((await as('max@acme.test').get('/api/v1/projects?externalItemId=ext-2')).body.projects, [],
      'a project the caller cannot see is not found')
    t.same((await as('gina@globex.test').get('/api/v1/projects?externalItemId=ext-1')).body.projects, [],
      'another organization finds nothing')
  })

  t.test('GET externalItemId lookup refuses limit, cursor and a blank value with 400 INVALID_QUERY', async (t) => {
    refused(t, await olive.get('/api/v1/projects?externalItemId=ext-1&limit=5'), 400, 'INVALID_QUERY', 'lookup with limit')
    const cursor = (await olive.get('/api/v1/projects?limit=1')).body.continueCursor
    t.ok(cursor)
    refused(t, await olive.get(`/api/v1/projects?externalItemId=ext-1&cursor=${encodeURIComponent(cursor)}`), 400, 'INVALID_QUERY', 'lookup with cursor')
    refused(t, await olive.get('/api/v1/projects?externalItemId='), 400, 'INVALID_QUERY', 'blank lookup')
  })
})

t.test('GET externalItemId lookup finds archived projects', async (t) => {
  const { as, projects } = await world(t, { projects: lookupProjects() })
  const olive = as('olive@acme.test')
  t.equal((await olive.patch(`/api/v1/projects/${projects.Shelved!}`, { archived: true })).status, 200)
  const archived = await olive.get('/api/v1/projects?externalItemId=ext-2')
  t.same(ids(archived), [projects.Shelved!], 'lookup finds archived projects')
  t.type(archived.body.projects[0].archivedAt, 'number')
})

const visibilityWorld = (t: Test) => world(t, {
  seed: { teams: [...acme().teams!, { org: 'acme', name: 'Readers', members: ['max@acme.test'] }] },
  projects: [
    project('UserRead', { access: [{ email: 'max@acme.test', level: 'read' }] }),
    project('TeamRead', { access: [{ team: 'Core', level: 'read' }] }),
    project('MemberTeam', { access: [{ team: 'Readers', level: 'read' }] }),
    project('Private'),
    { org: 'globex', name: 'Globex Only', createdBy: 'gina@globex.test', access: [] },
  ],
})
const sortedNames = (as: (email: string) => Client) => async (email: string) => names(await as(email).get('/api/v1/projects')).sort()

t.test('project visibility, over grants to users and teams and a project of another organization', async (t) => {
  const { as, projects } = await visibilityWorld(t)
  const sorted = sortedNames(as)
  t.test('GET lists the projects granted to the caller directly or through a team', async (t) => {
    t.same(await sorted('max@acme.test'), ['MemberTeam', 'UserRead'], 'member: the user grant and the team grant')
    t.same(await sorted('eddie@acme.test'), ['TeamRead'], 'editor: through team Core')
    t.same(await sorted('dev@acme.test'), [], 'developer without grants sees nothing')
  })

  t.test('GET lists every project of the organization to its owners and admins', async (t) => {
    t.same(await sorted('olive@acme.test'), ['MemberTeam', 'Private', 'TeamRead', 'UserRead'], 'owner sees all of acme')
    t.same(await sorted('adam@acme.test'), ['MemberTeam', 'Private', 'TeamRead', 'UserRead'], 'admin sees all of acme')
  })

  t.test('another organization\'s projects are never listed, changed or deleted', async (t) => {
    t.same(await sortedNames(as)('gina@globex.test'), ['Globex Only'], 'globex sees only its own')
    for (const email of ['olive@acme.test', 'adam@acme.test', 'max@acme.test'] as const) {
      t.notOk(names(await as(email).get('/api/v1/projects?archived=include')).includes('Globex Only'), `${email} never sees globex`)
    }
    refused(t, await as('olive@acme.test').patch(`/api/v1/projects/${projects['Globex Only']!}`, { name: 'Mine' }), 404, 'NOT_FOUND',
      'another organization\'s project')
    refused(t, await as('olive@acme.test').del(`/api/v1/projects/${projects['Globex Only']!}`), 404, 'NOT_FOUND',
      'deleting another organization\'s project')
  })
})

/** Shared (max, dev read; eddie edits), MemberEdit (max edits) and Private; the list before any refusal. */
async function patchWorld(t: Test) {
  const w = await world(t, {
    projects: [
      project('Shared', {
        access: [
          { email: 'max@acme.test', level: 'read' },
          { email: 'eddie@acme.test', level: 'edit' },
          { email: 'dev@acme.test', level: 'read' },
        ],
      }),
      project('MemberEdit', { access: [{ email: 'max@acme.test', level: 'edit' }] }),
      project('Private'),
    ],
  })
  const before = (await w.as('olive@acme.test').get('/api/v1/projects')).body
  const unchanged = async () =>
    t.same((await w.as('olive@acme.test').get('/api/v1/projects')).body, before, 'no refused update changed anything')
  return { ...w, shared: `/api/v1/projects/${w.projects.Shared!}`, unchanged }
}

t.test('PATCH refusals, over Shared, MemberEdit and Private', async (t) => {
  const { as, projects, shared, unchanged } = await patchWorld(t)
  t.test('PATCH refuses an empty, unknown, blank or unchangeable field with 400 INVALID_BODY', async (t) => {
    refused(t, await as('olive@acme.test').patch(shared, {}), 400, 'INVALID_BODY', 'empty update')
    refused(t, await as('olive@acme.test').patch(shared), 400, 'INVALID_BODY', 'no body')
    const unknown = await as('olive@acme.test').patch(shared, { name: 'X', color: 'red' })
    refused(t, unknown, 400, 'INVALID_BODY', 'unknown key')
    t.ok(unknown.body.data.issues.some((i: { path: string; message: string }) => i.path === 'color' || i.message.includes('color')))
    refused(t, await as('olive@acme.test').patch(shared, { name: '  ' }), 400, 'INVALID_BODY', 'blank name')
    refused(t, await as('olive@acme.test').patch(shared, { name: null }), 400, 'INVALID_BODY', 'null name')
    refused(t, await as('olive@acme.test').patch(shared, { archived: 'yes' }), 400, 'INVALID_BODY', 'non-boolean archived')
    refused(t, await as('olive@acme.test').patch(shared, { key: 'NEW' }), 400, 'INVALID_BODY', 'key is not changeable')
    await unchanged()
  })

  t.test('PATCH archiving needs an owner or admin, and changing fields edit access and a role above Member', async (t) => {
    refused(t, await as('eddie@acme.test').patch(shared, { archived: true }), 403, 'ROLE_FORBIDDEN', 'editor with edit access archives')
    refused(t, await as('eddie@acme.test').patch(shared, { archived: false }), 403, 'ROLE_FORBIDDEN', 'editor with edit access restores')
    refused(t, await as('eddie@acme.test').patch(shared, { archived: true, name: 'Y' }), 403, 'ROLE_FORBIDDEN', 'editor archives and renames')
    refused(t, await as('max@acme.test').patch(shared, { name: 'Y' }), 403, 'ROLE_FORBIDDEN', 'read-only member renames')
    refused(t, await as('max@acme.test').patch(shared, { description: null }), 403, 'ROLE_FORBIDDEN', 'read-only member describes')
    refused(t, await as('max@acme.test').patch(shared, { archived: true }), 403, 'ROLE_FORBIDDEN', 'read-only member archives')
    refused(t, await as('dev@acme.test').patch(shared, { externalItemId: 'x' }), 403, 'ROLE_FORBIDDEN', 'developer with read access')
    refused(t, await as('max@acme.test').patch(`/api/v1/projects/${projects.MemberEdit!}`, { name: 'Y' }), 403, 'ROLE_FORBIDDEN',
      'the Member role reads only, even with an edit grant')
    await unchanged()
  })

  t.test('PATCH on an invisible, absent or malformed project id answers 404 NOT_FOUND before the body is checked', async (t) => {
    const priv = `/api/v1/projects/${projects.Private!}`
    refused(t, await as('max@acme.test').patch(priv, { name: 'Y' }), 404, 'NOT_FOUND', 'invisible project, rename')
    refused(t, await as('max@acme.test').patch(priv, { archived: true }), 404, 'NOT_FOUND', 'invisible project, archive')
    refused(t, await as('eddie@acme.test').patch(priv, { name: 'Y' }), 404, 'NOT_FOUND', 'invisible project, editor')
    refused(t, await as('eddie@acme.test').patch(priv, {}), 404, 'NOT_FOUND', 'invisible project, empty body')
    refused(t, await as('olive@acme.test').patch('/api/v1/projects/00000000-0000-4000-8000-000000000000', { name: 'Y' }), 404, 'NOT_FOUND',
      'absent project')
    refused(t, await as('olive@acme.test').patch('/api/v1/projects/not-a-uuid', { name: 'Y' }), 404, 'NOT_FOUND', 'malformed id')
    refused(t, await as('olive@acme.test').patch('/api/v1/projects/123', { name: 'Y' }), 404, 'NOT_FOUND', 'numeric id')
    await unchanged()
  })
})

t.test('PATCH by an editor with edit access renames, trimming the name, with version and request-id headers', async (t) => {
  const { as, shared } = await patchWorld(t)
  const ok = await as('eddie@acme.test').patch(shared, { name: '  Shared Two ' })
  t.equal(ok.status, 200, 'editor with edit access renames')
  t.equal(ok.body.project.name, 'Shared Two', 'the new name is trimmed')
  t.ok(ok.headers.get('x-service-api-version'))
  t.ok(ok.headers.get('x-request-id'))
})

/** Vault (externalItemId vault-1, eddie edits), archived by an admin. */
async function archivedVault(t: Test) {
  const w = await world(t, {
    projects: [project('Vault', { externalItemId: 'vault-1', access: [{ email: 'eddie@acme.test', level: 'edit' }] })],
  })
  const path = `/api/v1/projects/${w.projects.Vault!}`
  const adam = w.as('adam@acme.test')
  const archived = await adam.patch(path, { archived: true })
  t.equal(archived.status, 200, 'admin archives')
  return { ...w, path, adam, eddie: w.as('eddie@acme.test'), archived }
}

t.test('an archived project is hidden from the default list but still read with archived=include and by lookup', async (t) => {
  const { eddie, archived } = await archivedVault(t)
  t.type(archived.body.project.archivedAt, 'number')
  t.same((await eddie.get('/api/v1/projects')).body.projects, [], 'archived is hidden by default')
  t.same(names(await eddie.get('/api/v1/projects?archived=include')), ['Vault'], 'still readable with archived=include')
  t.same(names(await eddie.get('/api/v1/projects?externalItemId=vault-1')), ['Vault'], 'still found by lookup')
})

t.test('an archived project refuses every change but restoring with 403 PROJECT_ARCHIVED', async (t) => {
  const { eddie, adam, path } = await archivedVault(t)
  refused(t, await eddie.patch(path, { name: 'Renamed' }), 403, 'PROJECT_ARCHIVED', 'editor renames an archived project')
  refused(t, await adam.patch(path, { name: 'Renamed' }), 403, 'PROJECT_ARCHIVED', 'admin renames without restoring')
  refused(t, await adam.patch(path, { description: null }), 403, 'PROJECT_ARCHIVED', 'clearing the description')
  refused(t, await adam.patch(path, { externalItemId: null }), 403, 'PROJECT_ARCHIVED', 'releasing the externalItemId')
  refused(t, await adam.patch(path, { name: 'Renamed', archived: true }), 403, 'PROJECT_ARCHIVED', 'renaming while staying archived')
  const still = (await eddie.get('/api/v1/projects?externalItemId=vault-1')).body.projects[0]
  t.equal(still.name, 'Vault', 'refused writes changed nothing')
  t.type(still.archivedAt, 'number', 'still archived')
})

t.test('an archived project keeps its externalItemId', async (t) => {
  const { as } = await archivedVault(t)
  const dup = await as('olive@acme.test').post('/api/v1/projects', { name: 'Copy', externalItemId: 'vault-1' })
  refused(t, dup, 409, 'PROJECT_DUPLICATE_EXTERNAL_ID', 'an archived project keeps its externalItemId')
  t.equal(dup.body.data.key, 'VAULT')
})

t.test('PATCH restoring and renaming in one request restores first, so the rename applies', async (t) => {
  const { as, eddie, path } = await archivedVault(t)
  const restored = await as('olive@acme.test').patch(path, { archived: false, name: 'New' })
  t.equal(restored.status, 200, 'restore and rename in one PATCH: restore applies first')
  t.equal(restored.body.project.name, 'New')
  t.notOk('archivedAt' in restored.body.project, 'restored')
  t.same(names(await eddie.get('/api/v1/projects')), ['New'], 'back in the default list')
})

t.test('PATCH renaming and archiving in one request archives last, so the rename applies', async (t) => {
  const { as, projects, eddie } = await world(t, {
    projects: [project('Vault', { externalItemId: 'vault-1', access: [{ email: 'eddie@acme.test', level: 'edit' }] })],
  })
  const renamedAndArchived = await as('adam@acme.test').patch(`/api/v1/projects/${projects.Vault!}`, { name: 'X', archived: true })
  t.equal(renamedAndArchived.status, 200, 'rename and archive: the archive applies last')
  t.equal(renamedAndArchived.body.project.name, 'X')
  t.type(renamedAndArchived.body.project.archivedAt, 'number')
  t.same(names(await eddie.get('/api/v1/projects?archived=only')), ['X'])
})

t.test('PATCH archived false alone restores a project, which is writable again', async (t) => {
  const { eddie, adam, path } = await archivedVault(t)
  const restoredOnly = await adam.patch(path, { archived: false })
  t.equal(restoredOnly.status, 200, 'restore alone')
  t.notOk('archivedAt' in restoredOnly.body.project)
  t.equal((await eddie.patch(path, { description: 'writable again' })).status, 200, 'writes work after restore')
})

/** First (FIR, described, externalItemId shared-id) and Second (SEC). */
async function fieldsWorld(t: Test) {
  const w = await world(t, {
    projects: [
      project('First', { key: 'FIR', description: 'about first', externalItemId: 'shared-id' }),
      project('Second', { key: 'SEC' }),
    ],
  })
  return { ...w, olive: w.as('olive@acme.test'), first: `/api/v1/projects/${w.projects.First!}`, second: `/api/v1/projects/${w.projects.Second!}` }
}

t.test('PATCH sets a description, null clears it, and fields not sent stay as they were', async (t) => {
  const { olive, first, second } = await fieldsWorld(t)
  const described = await olive.patch(second, { description: 'about second' })
  t.equal(described.status, 200)
  t.equal(described.body.project.description, 'about second')
  const cleared = await olive.patch(first, { description: null })
  t.equal(cleared.status, 200)
  t.equal(cleared.body.project.description, null, 'description null clears')
  t.equal(cleared.body.project.name, 'First', 'fields not sent stay as they were')
  t.equal(cleared.body.project.externalItemId, 'shared-id')
})

t.test('PATCH to another project\'s externalItemId is refused with 409, but a project may re-send its own', async (t) => {
  const { olive, first, second } = await fieldsWorld(t)
  t.equal((await olive.patch(second, { description: 'about second' })).status, 200)
  const dup = await olive.patch(second, { externalItemId: ' shared-id ' })
  refused(t, dup, 409, 'PROJECT_DUPLICATE_EXTERNAL_ID', 'PATCH to a taken externalItemId')
  t.equal(dup.body.data.key, 'FIR', 'data.key names the holder')
  const secondNow = (await olive.get('/api/v1/projects')).body.projects.find((p: { key: string }) => p.key === 'SEC')
  t.equal(secondNow.externalItemId, null, 'the refused PATCH wrote nothing')
  t.equal(secondNow.description, 'about second')

  const same = await olive.patch(first, { externalItemId: 'shared-id' })
  t.equal(same.status, 200, 'a project may re-send its own externalItemId')
})

t.test('PATCH externalItemId null releases it for another project, existing or new', async (t) => {
  const { olive, first, second, projects } = await fieldsWorld(t)
  const released = await olive.patch(first, { externalItemId: null })
  t.equal(released.status, 200)
  t.equal(released.body.project.externalItemId, null, 'null releases it')
  t.same((await olive.get('/api/v1/projects?externalItemId=shared-id')).body.projects, [], 'lookup no longer finds it')

  const taken = await olive.patch(second, { externalItemId: 'shared-id' })
  t.equal(taken.status, 200, 'another project can take a released externalItemId')
  t.equal(taken.body.project.externalItemId, 'shared-id')
  t.same(ids(await olive.get('/api/v1/projects?externalItemId=shared-id')), [projects.Second!])

  const created = await olive.post('/api/v1/projects', { name: 'Third', externalItemId: 'third-id' })
  t.equal(created.status, 201)
  t.equal((await olive.patch(`/api/v1/projects/${created.body.project.id}`, { externalItemId: null })).status, 200)
  t.equal((await olive.post('/api/v1/projects', { name: 'Fourth', externalItemId: 'third-id' })).status, 201,
    'a released externalItemId can be used by a new project')
})

t.test('PATCH stores externalItemId trimmed and NFC-normalized, and refuses a blank one', async (t) => {
  const { olive, first } = await fieldsWorld(t)
  const normalized = await olive.patch(first, { externalItemId: '  cafe\u0301 ' })
  t.equal(normalized.body.project.externalItemId, 'caf\u00e9', 'PATCH stores externalItemId trimmed and NFC-normalized')
  refused(t, await olive.patch(first, { externalItemId: '   ' }), 400, 'INVALID_BODY', 'blank externalItemId')
})

const deleteWorld = async (t: Test) => {
  const w = await world(t, {
    projects: [
      project('Doomed', { externalItemId: 'doomed-1', access: [{ email: 'max@acme.test', level: 'read' }] }),
      project('ReadOnly', { access: [{ email: 'eddie@acme.test', level: 'read' }] }),
      project('Held', { access: [{ email: 'eddie@acme.test', level: 'edit' }] }),
      project('Detached'),
      project('Private'),
      project('Shelved'),
    ],
  })
  return { ...w, olive: w.as('olive@acme.test'), path: (name: string) => `/api/v1/projects/${w.projects[name]!}` }
}

t.test('DELETE is refused without edit access (403), on an invisible or absent project (404) and for a bad mode (400)', async (t) => {
  const { as, olive, path } = await deleteWorld(t)
  refused(t, await as('max@acme.test').del(path('Doomed')), 403, 'ROLE_FORBIDDEN', 'read-only member deletes')
  refused(t, await as('eddie@acme.test').del(path('ReadOnly')), 403, 'ROLE_FORBIDDEN', 'read-only editor deletes')
  refused(t, await as('max@acme.test').del(path('Private')), 404, 'NOT_FOUND', 'invisible project')
  refused(t, await as('eddie@acme.test').del(path('Private')), 404, 'NOT_FOUND', 'invisible project, editor')
  refused(t, await olive.del('/api/v1/projects/not-a-uuid'), 404, 'NOT_FOUND', 'malformed id')
  refused(t, await olive.del('/api/v1/projects/00000000-0000-4000-8000-000000000000'), 404, 'NOT_FOUND', 'absent project')
  refused(t, await olive.del(path('Doomed'), { mode: 'bogus' }), 400, 'INVALID_BODY', 'unknown mode')
  refused(t, await olive.del(path('Doomed'), { mode: 'detach', force: true }), 400, 'INVALID_BODY', 'unknown body key')
  t.equal((await olive.get('/api/v1/projects')).body.projects.length, 6, 'no refused delete removed anything')
})

t.test('DELETE answers 204 with no body and the project is gone for everyone, its externalItemId freed', async (t) => {
  const { as, olive, path } = await deleteWorld(t)
  const deleted = await olive.del(path('Doomed'))
  t.equal(deleted.status, 204, 'cascade delete by default')
  t.equal(deleted.text, '', 'no body')
  t.ok(deleted.headers.get('x-service-api-version'), 'version header on a delete')
  t.ok(deleted.headers.get('x-request-id'), 'request id on a delete')
  t.notOk(names(await olive.get('/api/v1/projects?archived=include')).includes('Doomed'), 'gone from the list')
  t.same((await olive.get('/api/v1/projects?externalItemId=doomed-1')).body.projects, [], 'gone from lookup')
  t.same((await as('max@acme.test').get('/api/v1/projects')).body.projects, [], 'gone for its reader too')
  refused(t, await olive.del(path('Doomed')), 404, 'NOT_FOUND', 'deleting it again')
  refused(t, await olive.patch(path('Doomed'), { name: 'Back' }), 404, 'NOT_FOUND', 'changing a deleted project')
  t.equal((await olive.post('/api/v1/projects', { name: 'Reborn', externalItemId: 'doomed-1' })).status, 201,
    'the deleted project\'s externalItemId is free')
})

t.test('DELETE of a project under legal hold is refused with 409 PROJECT_LEGAL_HOLD in every mode, writing nothing', async (t) => {
  const { as, olive, path, service, projects } = await deleteWorld(t)
  await service.db.owner`update app.projects set legal_hold_at = now() where id = ${projects.Held!}`
  const held = await as('eddie@acme.test').del(path('Held'))
  refused(t, held, 409, 'PROJECT_LEGAL_HOLD', 'legal hold')
  refused(t, await olive.del(path('Held'), { mode: 'detach' }), 409, 'PROJECT_LEGAL_HOLD', 'legal hold, detach')
  t.ok(names(await olive.get('/api/v1/projects')).includes('Held'), 'a held project is still there')
  const [audited] = await service.db.owner<{ count: number }[]>`
    select count(*)::int as count from app.audit_log where action = 'project.deleted' and subject_id = ${projects.Held!}`
  t.equal(audited?.count, 0, 'nothing written for a refused delete')
})

t.test('DELETE takes mode detach or cascade', async (t) => {
  const { olive, path } = await deleteWorld(t)
  const detached = await olive.del(path('Detached'), { mode: 'detach' })
  t.equal(detached.status, 204, 'detach mode')
  t.notOk(names(await olive.get('/api/v1/projects?archived=include')).includes('Detached'))
  t.equal((await olive.del(path('Shelved'), { mode: 'cascade' })).status, 204, 'explicit cascade mode')
})

t.test('DELETE works for the project\'s creator and on an archived project', async (t) => {
  const { as, olive } = await world(t, { projects: [] })
  const mine = await as('eddie@acme.test').post('/api/v1/projects', { name: 'Eddie Temp' })
  t.equal((await as('eddie@acme.test').del(`/api/v1/projects/${mine.body.project.id}`)).status, 204, 'the creator deletes')

  const archived = await olive.post('/api/v1/projects', { name: 'Archived Then Deleted' })
  await olive.patch(`/api/v1/projects/${archived.body.project.id}`, { archived: true })
  t.equal((await olive.del(`/api/v1/projects/${archived.body.project.id}`)).status, 204, 'an archived project can be deleted')
})

/** Ten projects, the clock pinned, and olive's five cascade deletes of the minute spent. */
async function spentCascadeBudget(t: Test) {
  const seeded = Array.from({ length: 10 }, (_, i) => project(`Gone ${i}`))
  const w = await world(t, { projects: seeded })
  const start = Date.parse('2031-03-04T05:06:07Z')
  await pinClock(w.service.db.owner, start)
  const olive = w.as('olive@acme.test')
  const path = (i: number) => `/api/v1/projects/${w.projects[`Gone ${i}`]!}`
  for (let i = 0; i < 5; i++) t.equal((await olive.del(path(i))).status, 204, `cascade delete ${i + 1}`)
  return { ...w, start, olive, path }
}

t.test('DELETE cascade draws on 5 per user per minute, then 429 RATE_LIMITED with Retry-After, removing nothing', async (t) => {
  const { olive, path } = await spentCascadeBudget(t)
  const limited = await olive.del(path(5))
  refused(t, limited, 429, 'RATE_LIMITED', 'the sixth cascade delete within a minute')
  const retryAfter = limited.headers.get('retry-after')
  t.match(retryAfter, /^\d+$/, 'Retry-After is a whole number of seconds')
  t.ok(Number(retryAfter) >= 1, 'Retry-After is at least 1')
  t.type(limited.body.requestId, 'string', 'a 429 carries requestId')
  t.equal(limited.body.requestId, limited.headers.get('x-request-id'))
  t.ok(limited.headers.get('x-service-api-version'))
  t.ok(names(await olive.get('/api/v1/projects')).includes('Gone 5'), 'the refused delete removed nothing')
  refused(t, await olive.del(path(5), { mode: 'cascade' }), 429, 'RATE_LIMITED', 'still limited at the same instant')
})

t.test('a detach delete does not draw on the cascade budget, and each user has a budget of their own', async (t) => {
  const { as, olive, path } = await spentCascadeBudget(t)
  t.equal((await olive.del(path(6), { mode: 'detach' })).status, 204, 'detach does not draw on the cascade budget')
  t.equal((await as('adam@acme.test').del(path(7))).status, 204, 'another user has their own budget')
})

t.test('the cascade delete budget is refilled a minute later', async (t) => {
  const { service, start, olive, path } = await spentCascadeBudget(t)
  refused(t, await olive.del(path(5)), 429, 'RATE_LIMITED', 'the sixth cascade delete within a minute')
  await pinClock(service.db.owner, start + 61_000)
  t.equal((await olive.del(path(5))).status, 204, 'a minute later a cascade delete works again')
  t.notOk(names(await olive.get('/api/v1/projects')).includes('Gone 5'))
})

t.test('every project write answers X-Service-Api-Version and echoes an acceptable X-Request-Id', async (t) => {
  const { service, keyOf } = await world(t, { projects: [] })
  const key = keyOf('olive@acme.test')
  const created = await service.request('POST', '/api/v1/projects', { key, body: { name: 'Headers' }, headers: { 'x-request-id': 'req-create-1' } })
  t.equal(created.status, 201)
  t.equal(created.headers.get('x-request-id'), 'req-create-1', 'POST echoes the request id')
  t.ok(created.headers.get('x-service-api-version'), 'POST carries the version header')
  const id = created.body.project.id
  const writes: [string, string, unknown, number][] = [
    ['PATCH', `/api/v1/projects/${id}`, { description: 'd' }, 200],
    ['PATCH', `/api/v1/projects/${id}`, {}, 400],
    ['POST', '/api/v1/projects', { name: '' }, 400],
    ['DELETE', `/api/v1/projects/${id}`, { mode: 'bogus' }, 400],
    ['DELETE', `/api/v1/projects/${id}`, undefined, 204],
    ['DELETE', `/api/v1/projects/${id}`, undefined, 404],
  ]
  for (const [i, [method, path, body, status]] of writes.entries()) {
    const requestId = `req-${i}_${method}`
    const res = await service.request(method, path, { key, body, headers: { 'x-request-id': requestId } })
    t.equal(res.status, status, `${method} ${i}: ${status}`)
    t.equal(res.headers.get('x-request-id'), requestId, `${method} ${i}: the request id is echoed`)
    t.ok(res.headers.get('x-service-api-version'), `${method} ${i}: version header`)
  }
})

t.test('a project write replaces an unacceptable X-Request-Id', async (t) => {
  const { service, keyOf } = await world(t, { projects: [] })
  const key = keyOf('olive@acme.test')
  const generated = await service.request('POST', '/api/v1/projects', { key, body: { name: 'Generated' }, headers: { 'x-request-id': 'not ok!' } })
  const replaced = generated.headers.get('x-request-id')
  t.ok(replaced, 'an unacceptable request id is replaced')
  t.not(replaced, 'not ok!')
})
