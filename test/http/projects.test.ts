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

t.test('POST creates a project: 201, {project}, Location, trimmed name, version and request-id headers', async (t) => {
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

  const minimal = await as('olive@acme.test').post('/api/v1/projects', { name: 'Bare' })
  t.equal(minimal.status, 201)
  t.equal(minimal.body.project.description, null, 'description defaults to null')
  t.equal(minimal.body.project.externalItemId, null, 'externalItemId defaults to null')

  const spaced = await as('olive@acme.test').post('/api/v1/projects', { name: '\t Tabbed\u00a0Name \n', externalItemId: '\tcrm-2\r\n' })
  t.equal(spaced.status, 201)
  t.equal(spaced.body.project.name, 'Tabbed\u00a0Name', 'every kind of surrounding white space is trimmed, inner kept')
  t.equal(spaced.body.project.externalItemId, 'crm-2', 'externalItemId is trimmed of tabs and line breaks too')

  const listed = await as('olive@acme.test').get('/api/v1/projects')
  t.same(names(listed), ['Tabbed\u00a0Name', 'Bare', 'Launch Plan'])
})

t.test('POST validation: blank name, unknown keys, malformed keys and bodies answer 400 INVALID_BODY', async (t) => {
  const { as } = await world(t, { projects: [] })
  const olive = as('olive@acme.test')
  refused(t, await olive.post('/api/v1/projects', { name: '' }), 400, 'INVALID_BODY', 'empty name')
  refused(t, await olive.post('/api/v1/projects', { name: '   \t ' }), 400, 'INVALID_BODY', 'whitespace-only name')
  refused(t, await olive.post('/api/v1/projects', { name: '\n\u3000\u00a0' }), 400, 'INVALID_BODY', 'unicode-space-only name')
  refused(t, await olive.post('/api/v1/projects', {}), 400, 'INVALID_BODY', 'missing name')
  refused(t, await olive.post('/api/v1/projects', { name: 42 }), 400, 'INVALID_BODY', 'non-string name')
  refused(t, await olive.post('/api/v1/projects'), 400, 'INVALID_BODY', 'no body')

  const unknown = await olive.post('/api/v1/projects', { name: 'Ok', color: 'red' })
  refused(t, unknown, 400, 'INVALID_BODY', 'unknown key')
  t.ok(unknown.body.data.issues.some((i: { path: string; message: string }) => i.path === 'color' || i.message.includes('color')),
    'data.issues names the unknown key')

  for (const key of ['A', 'a', '1ab', '12', 'ABCDEFG', 'a-b', 'ab cd', 'É1', '', '  ']) {
    refused(t, await olive.post('/api/v1/projects', { name: 'Keyed', key }), 400, 'INVALID_BODY', `invalid key ${JSON.stringify(key)}`)
  }
  refused(t, await olive.post('/api/v1/projects', { name: 'Keyed', externalItemId: '   ' }), 400, 'INVALID_BODY', 'blank externalItemId')
  refused(t, await olive.post('/api/v1/projects', { name: 'Keyed', projectId: 'x' }), 400, 'INVALID_BODY', 'body projectId')

  const listed = await olive.get('/api/v1/projects?archived=include')
  t.same(listed.body.projects, [], 'no refused create wrote a project')

  for (const [sent, stored] of [['ab', 'AB'], ['Zz9', 'ZZ9'], ['q12345', 'Q12345']] as const) {
    const res = await olive.post('/api/v1/projects', { name: `Key ${sent}`, key: sent })
    t.equal(res.status, 201)
    t.equal(res.body.project.key, stored, `key ${sent} is stored as ${stored}`)
  }
})

t.test('POST derives a key from the name when none is sent', async (t) => {
  const { as } = await world(t, { projects: [] })
  const olive = as('olive@acme.test')
  const keyOf = async (name: string) => {
    const res = await olive.post('/api/v1/projects', { name })
    t.equal(res.status, 201, `created ${name}`)
    return res.body.project.key as string | null
  }
  t.equal(await keyOf('Alpha'), 'ALPHA', 'one word: the word itself')
  t.equal(await keyOf('Sales Pipeline'), 'SP', 'several words: the initials')
  t.equal(await keyOf('Café'), 'CAFE', 'accents folded')
  t.equal(await keyOf('Évènement Général'), 'EG', 'accented initials folded')
  t.equal(await keyOf('Marketing'), 'MARKET', 'a long word is cut to six characters')

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

  t.equal(await keyOf('123'), null, 'digits only: keyless')
  t.equal(await keyOf('日本'), null, 'no ASCII letters: keyless')
  t.equal(await keyOf('日本'), null, 'two keyless projects do not collide')
  t.equal(await keyOf('X'), null, 'one letter is too short: keyless')

  const listed = await olive.get('/api/v1/projects')
  const keys = listed.body.projects.map((p: { key: string | null }) => p.key).filter((k: string | null) => k !== null)
  t.equal(new Set(keys).size, keys.length, 'every key is unique in the organization')
})

t.test('POST explicit keys: PROJECT_KEY_TAKEN, even against an invisible project; keys are per organization', async (t) => {
  const { as } = await world(t, { projects: [project('Secret', { key: 'SEC' })] })
  const eddie = as('eddie@acme.test')
  t.same((await eddie.get('/api/v1/projects')).body.projects, [], 'eddie cannot see Secret')
  refused(t, await eddie.post('/api/v1/projects', { name: 'Mine', key: 'sec' }), 409, 'PROJECT_KEY_TAKEN', 'explicit key taken by an invisible project')
  refused(t, await as('olive@acme.test').post('/api/v1/projects', { name: 'Mine', key: 'SEC' }), 409, 'PROJECT_KEY_TAKEN', 'explicit key taken')
  t.same((await eddie.get('/api/v1/projects')).body.projects, [], 'the refused create wrote nothing')

  const derived = await eddie.post('/api/v1/projects', { name: 'Sec' })
  t.equal(derived.status, 201, 'a derived key that collides with an invisible project is re-derived')
  t.match(derived.body.project.key, KEY_SHAPE)
  t.not(derived.body.project.key, 'SEC')

  const other = await as('gina@globex.test').post('/api/v1/projects', { name: 'Elsewhere', key: 'SEC' })
  t.equal(other.status, 201, 'another organization may use the same key')
  t.equal(other.body.project.key, 'SEC')
})

t.test('POST externalItemId: trimmed, NFC-normalized, unique per organization', async (t) => {
  const { as } = await world(t, { projects: [project('Hidden', { key: 'HID', externalItemId: 'hidden-1' })] })
  const olive = as('olive@acme.test')
  const created = await olive.post('/api/v1/projects', { name: 'Accent', externalItemId: '  e\u0301  ' })
  t.equal(created.status, 201)
  t.equal(created.body.project.externalItemId, '\u00e9', 'stored trimmed and composed')
  const key = created.body.project.key

  const found = await olive.get(`/api/v1/projects?externalItemId=${encodeURIComponent('\u00e9')}`)
  t.equal(found.status, 200)
  t.same(ids(found), [created.body.project.id], 'lookup by the composed form finds it')
  const foundDecomposed = await olive.get(`/api/v1/projects?externalItemId=${encodeURIComponent(' e\u0301')}`)
  t.same(ids(foundDecomposed), [created.body.project.id], 'lookup by the decomposed, padded form finds it')

  const dup = await olive.post('/api/v1/projects', { name: 'Other', externalItemId: '\u00e9' })
  refused(t, dup, 409, 'PROJECT_DUPLICATE_EXTERNAL_ID', 'duplicate externalItemId')
  t.equal(dup.body.data.key, key, 'data.key names the existing project\'s key')
  const dupDecomposed = await olive.post('/api/v1/projects', { name: 'Other', externalItemId: 'e\u0301 ' })
  refused(t, dupDecomposed, 409, 'PROJECT_DUPLICATE_EXTERNAL_ID', 'duplicate in another normal form')
  t.equal(dupDecomposed.body.data.key, key)

  const eddie = as('eddie@acme.test')
  const hidden = await eddie.post('/api/v1/projects', { name: 'Mine', externalItemId: 'hidden-1' })
  refused(t, hidden, 409, 'PROJECT_DUPLICATE_EXTERNAL_ID', 'duplicate of an invisible project')
  t.equal(hidden.body.data.key, 'HID')
  t.same((await eddie.get('/api/v1/projects')).body.projects, [], 'the refused create wrote nothing')

  const globex = await as('gina@globex.test').post('/api/v1/projects', { name: 'Accent', externalItemId: '\u00e9' })
  t.equal(globex.status, 201, 'another organization may use the same externalItemId')
  const own = await as('gina@globex.test').get(`/api/v1/projects?externalItemId=${encodeURIComponent('\u00e9')}`)
  t.same(ids(own), [globex.body.project.id], 'lookup stays inside the organization')
})

t.test('POST by role: Member is refused, Developer and Editor create, the creator gets edit access', async (t) => {
  const { as } = await world(t, { projects: [] })
  refused(t, await as('max@acme.test').post('/api/v1/projects', { name: 'Nope' }), 403, 'ROLE_FORBIDDEN', 'member creates')
  t.same((await as('olive@acme.test').get('/api/v1/projects')).body.projects, [], 'nothing written')

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

t.test('GET lists newest first and hides archived projects unless asked', async (t) => {
  const { as } = await world(t, { projects: [] })
  const olive = as('olive@acme.test')
  const [one, two, three, four] = await createAll(t, olive, ['One', 'Two', 'Three', 'Four'])
  t.equal((await olive.patch(`/api/v1/projects/${two}`, { archived: true })).status, 200)
  t.equal((await olive.patch(`/api/v1/projects/${four}`, { archived: true })).status, 200)

  const active = await olive.get('/api/v1/projects')
  t.equal(active.status, 200)
  t.same(ids(active), [three, one], 'archived hidden by default, newest first')
  t.equal(active.body.isDone, true)
  t.equal(active.body.continueCursor, '')
  t.notOk('cursor' in active.body, 'a single page carries no deprecated cursor')
  t.ok(active.headers.get('etag'), 'a read carries an ETag')

  const included = await olive.get('/api/v1/projects?archived=include')
  t.same(ids(included), [four, three, two, one], 'archived=include lists everything newest first')
  const only = await olive.get('/api/v1/projects?archived=only')
  t.same(ids(only), [four, two], 'archived=only lists the archived ones')
  t.ok(only.body.projects.every((p: { archivedAt?: number }) => typeof p.archivedAt === 'number'), 'archived rows carry archivedAt')
  t.ok(active.body.projects.every((p: object) => !('archivedAt' in p)), 'active rows carry no archivedAt')

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

t.test('GET cursor refusals: empty, tampered, another user\'s, another filter\'s', async (t) => {
  const { as } = await world(t, { projects: [] })
  const olive = as('olive@acme.test')
  await createAll(t, olive, ['C1', 'C2', 'C3'])
  const first = await olive.get('/api/v1/projects?limit=1')
  const cursor: string = first.body.continueCursor
  t.ok(cursor, 'a cursor was issued')
  t.equal((await olive.get(`/api/v1/projects?limit=1&cursor=${encodeURIComponent(cursor)}`)).status, 200, 'the cursor itself works')

  refused(t, await olive.get('/api/v1/projects?cursor='), 400, 'INVALID_QUERY', 'empty cursor')
  refused(t, await olive.get('/api/v1/projects?limit=1&cursor='), 400, 'INVALID_QUERY', 'empty cursor with limit')
  refused(t, await olive.get(`/api/v1/projects?cursor=${encodeURIComponent(flip(cursor, 5))}`), 400, 'INVALID_CURSOR', 'payload tampered')
  refused(t, await olive.get(`/api/v1/projects?cursor=${encodeURIComponent(flip(cursor, cursor.length - 3))}`), 400, 'INVALID_CURSOR', 'signature tampered')
  refused(t, await olive.get('/api/v1/projects?cursor=not-a-cursor'), 400, 'INVALID_CURSOR', 'garbage')
  refused(t, await olive.get(`/api/v1/projects?cursor=${encodeURIComponent(cursor + '.x')}`), 400, 'INVALID_CURSOR', 'extra segment')
  refused(t, await as('adam@acme.test').get(`/api/v1/projects?cursor=${encodeURIComponent(cursor)}`), 400, 'INVALID_CURSOR',
    'another user\'s cursor, though they see the same rows')
  refused(t, await as('gina@globex.test').get(`/api/v1/projects?cursor=${encodeURIComponent(cursor)}`), 400, 'INVALID_CURSOR',
    'a cursor from another organization')
  refused(t, await olive.get(`/api/v1/projects?archived=include&cursor=${encodeURIComponent(cursor)}`), 400, 'INVALID_CURSOR',
    'a cursor issued for another archived filter')
  const includeCursor = (await olive.get('/api/v1/projects?archived=include&limit=1')).body.continueCursor
  refused(t, await olive.get(`/api/v1/projects?archived=only&cursor=${encodeURIComponent(includeCursor)}`), 400, 'INVALID_CURSOR',
    'include cursor under only')
  refused(t, await olive.get(`/api/v1/projects?cursor=${encodeURIComponent(includeCursor)}`), 400, 'INVALID_CURSOR',
    'include cursor under the default filter')
})

t.test('GET limit: clamped at 100, refused when not a positive integer; query parameters are checked', async (t) => {
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

  const small = await olive.get('/api/v1/projects?limit=1')
  t.equal(small.body.projects.length, 1)

  for (const limit of ['0', 'abc', '-1', '1.5', '1e2']) {
    refused(t, await olive.get(`/api/v1/projects?limit=${limit}`), 400, 'INVALID_QUERY', `limit=${limit}`)
  }
  refused(t, await olive.get('/api/v1/projects?limit='), 400, 'INVALID_QUERY', 'blank limit')
  refused(t, await olive.get('/api/v1/projects?limit=2&limit=3'), 400, 'INVALID_QUERY', 'repeated limit')
  refused(t, await olive.get('/api/v1/projects?sort=name'), 400, 'INVALID_QUERY', 'unknown query parameter')
  refused(t, await olive.post('/api/v1/projects?dryRun=1', { name: 'Q' }), 400, 'INVALID_QUERY', 'a write with a query parameter')
})

t.test('GET externalItemId lookup: one or none, archived included, not combinable with paging', async (t) => {
  const { as, projects } = await world(t, {
    projects: [
      project('Linked', { externalItemId: 'ext-1', access: [{ email: 'max@acme.test', level: 'read' }] }),
      project('Shelved', { externalItemId: 'ext-2' }),
      project('Unlinked'),
    ],
  })
  const olive = as('olive@acme.test')
  const hit = await olive.get('/api/v1/projects?externalItemId=ext-1')
  t.equal(hit.status, 200)
  t.same(Object.keys(hit.body).sort(), ['continueCursor', 'isDone', 'projects'])
  t.same(ids(hit), [projects.Linked!])
  t.equal(hit.body.isDone, true)
  t.equal(hit.body.continueCursor, '')

  const miss = await olive.get('/api/v1/projects?externalItemId=nope')
  t.equal(miss.status, 200)
  t.same(miss.body, { projects: [], isDone: true, continueCursor: '' }, 'a miss is an empty page, not 404')

  t.equal((await olive.patch(`/api/v1/projects/${projects.Shelved!}`, { archived: true })).status, 200)
  const archived = await olive.get('/api/v1/projects?externalItemId=ext-2')
  t.same(ids(archived), [projects.Shelved!], 'lookup finds archived projects')
  t.type(archived.body.projects[0].archivedAt, 'number')

  t.same(ids(await as('max@acme.test').get('/api/v1/projects?externalItemId=ext-1')), [projects.Linked!], 'a reader finds it')
  t.same((await as('max@acme.test').get('/api/v1/projects?externalItemId=ext-2')).body.projects, [],
    'a project the caller cannot see is not found')
  t.same((await as('gina@globex.test').get('/api/v1/projects?externalItemId=ext-1')).body.projects, [],
    'another organization finds nothing')

  refused(t, await olive.get('/api/v1/projects?externalItemId=ext-1&limit=5'), 400, 'INVALID_QUERY', 'lookup with limit')
  const cursor = (await olive.get('/api/v1/projects?limit=1')).body.continueCursor
  t.ok(cursor)
  refused(t, await olive.get(`/api/v1/projects?externalItemId=ext-1&cursor=${encodeURIComponent(cursor)}`), 400, 'INVALID_QUERY', 'lookup with cursor')
  refused(t, await olive.get('/api/v1/projects?externalItemId='), 400, 'INVALID_QUERY', 'blank lookup')
})

t.test('GET visibility: grants to users and teams, owners and admins see all, organizations are separate', async (t) => {
  const { as, projects } = await world(t, {
    seed: { teams: [...acme().teams!, { org: 'acme', name: 'Readers', members: ['max@acme.test'] }] },
    projects: [
      project('UserRead', { access: [{ email: 'max@acme.test', level: 'read' }] }),
      project('TeamRead', { access: [{ team: 'Core', level: 'read' }] }),
      project('MemberTeam', { access: [{ team: 'Readers', level: 'read' }] }),
      project('Private'),
      { org: 'globex', name: 'Globex Only', createdBy: 'gina@globex.test', access: [] },
    ],
  })
  const sorted = async (email: string) => names(await as(email).get('/api/v1/projects')).sort()
  t.same(await sorted('max@acme.test'), ['MemberTeam', 'UserRead'], 'member: the user grant and the team grant')
  t.same(await sorted('eddie@acme.test'), ['TeamRead'], 'editor: through team Core')
  t.same(await sorted('dev@acme.test'), [], 'developer without grants sees nothing')
  t.same(await sorted('olive@acme.test'), ['MemberTeam', 'Private', 'TeamRead', 'UserRead'], 'owner sees all of acme')
  t.same(await sorted('adam@acme.test'), ['MemberTeam', 'Private', 'TeamRead', 'UserRead'], 'admin sees all of acme')
  t.same(await sorted('gina@globex.test'), ['Globex Only'], 'globex sees only its own')
  for (const email of ['olive@acme.test', 'adam@acme.test', 'max@acme.test'] as const) {
    t.notOk(names(await as(email).get('/api/v1/projects?archived=include')).includes('Globex Only'), `${email} never sees globex`)
  }
  // Another organization's project cannot be changed or deleted either.
  refused(t, await as('olive@acme.test').patch(`/api/v1/projects/${projects['Globex Only']!}`, { name: 'Mine' }), 404, 'NOT_FOUND',
    'another organization\'s project')
  refused(t, await as('olive@acme.test').del(`/api/v1/projects/${projects['Globex Only']!}`), 404, 'NOT_FOUND',
    'deleting another organization\'s project')
})

t.test('PATCH refusals: empty body, roles, access, invisible and malformed ids', async (t) => {
  const { as, projects } = await world(t, {
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
  const shared = `/api/v1/projects/${projects.Shared!}`
  const before = (await as('olive@acme.test').get('/api/v1/projects')).body

  refused(t, await as('olive@acme.test').patch(shared, {}), 400, 'INVALID_BODY', 'empty update')
  refused(t, await as('olive@acme.test').patch(shared), 400, 'INVALID_BODY', 'no body')
  const unknown = await as('olive@acme.test').patch(shared, { name: 'X', color: 'red' })
  refused(t, unknown, 400, 'INVALID_BODY', 'unknown key')
  t.ok(unknown.body.data.issues.some((i: { path: string; message: string }) => i.path === 'color' || i.message.includes('color')))
  refused(t, await as('olive@acme.test').patch(shared, { name: '  ' }), 400, 'INVALID_BODY', 'blank name')
  refused(t, await as('olive@acme.test').patch(shared, { name: null }), 400, 'INVALID_BODY', 'null name')
  refused(t, await as('olive@acme.test').patch(shared, { archived: 'yes' }), 400, 'INVALID_BODY', 'non-boolean archived')
  refused(t, await as('olive@acme.test').patch(shared, { key: 'NEW' }), 400, 'INVALID_BODY', 'key is not changeable')

  refused(t, await as('eddie@acme.test').patch(shared, { archived: true }), 403, 'ROLE_FORBIDDEN', 'editor with edit access archives')
  refused(t, await as('eddie@acme.test').patch(shared, { archived: false }), 403, 'ROLE_FORBIDDEN', 'editor with edit access restores')
  refused(t, await as('eddie@acme.test').patch(shared, { archived: true, name: 'Y' }), 403, 'ROLE_FORBIDDEN', 'editor archives and renames')
  refused(t, await as('max@acme.test').patch(shared, { name: 'Y' }), 403, 'ROLE_FORBIDDEN', 'read-only member renames')
  refused(t, await as('max@acme.test').patch(shared, { description: null }), 403, 'ROLE_FORBIDDEN', 'read-only member describes')
  refused(t, await as('max@acme.test').patch(shared, { archived: true }), 403, 'ROLE_FORBIDDEN', 'read-only member archives')
  refused(t, await as('dev@acme.test').patch(shared, { externalItemId: 'x' }), 403, 'ROLE_FORBIDDEN', 'developer with read access')
  refused(t, await as('max@acme.test').patch(`/api/v1/projects/${projects.MemberEdit!}`, { name: 'Y' }), 403, 'ROLE_FORBIDDEN',
    'the Member role reads only, even with an edit grant')

  const priv = `/api/v1/projects/${projects.Private!}`
  refused(t, await as('max@acme.test').patch(priv, { name: 'Y' }), 404, 'NOT_FOUND', 'invisible project, rename')
  refused(t, await as('max@acme.test').patch(priv, { archived: true }), 404, 'NOT_FOUND', 'invisible project, archive')
  refused(t, await as('eddie@acme.test').patch(priv, { name: 'Y' }), 404, 'NOT_FOUND', 'invisible project, editor')
  refused(t, await as('eddie@acme.test').patch(priv, {}), 404, 'NOT_FOUND', 'invisible project, empty body')
  refused(t, await as('olive@acme.test').patch('/api/v1/projects/00000000-0000-4000-8000-000000000000', { name: 'Y' }), 404, 'NOT_FOUND',
    'absent project')
  refused(t, await as('olive@acme.test').patch('/api/v1/projects/not-a-uuid', { name: 'Y' }), 404, 'NOT_FOUND', 'malformed id')
  refused(t, await as('olive@acme.test').patch('/api/v1/projects/123', { name: 'Y' }), 404, 'NOT_FOUND', 'numeric id')

  const after = (await as('olive@acme.test').get('/api/v1/projects')).body
  t.same(after, before, 'no refused update changed anything')

  const ok = await as('eddie@acme.test').patch(shared, { name: '  Shared Two ' })
  t.equal(ok.status, 200, 'editor with edit access renames')
  t.equal(ok.body.project.name, 'Shared Two', 'the new name is trimmed')
  t.ok(ok.headers.get('x-service-api-version'))
  t.ok(ok.headers.get('x-request-id'))
})

t.test('PATCH archive and restore: archived projects refuse writes, stay readable and keep their externalItemId', async (t) => {
  const { as, projects } = await world(t, {
    projects: [project('Vault', { externalItemId: 'vault-1', access: [{ email: 'eddie@acme.test', level: 'edit' }] })],
  })
  const path = `/api/v1/projects/${projects.Vault!}`
  const adam = as('adam@acme.test')
  const eddie = as('eddie@acme.test')

  const archived = await adam.patch(path, { archived: true })
  t.equal(archived.status, 200, 'admin archives')
  t.type(archived.body.project.archivedAt, 'number')

  t.same((await eddie.get('/api/v1/projects')).body.projects, [], 'archived is hidden by default')
  t.same(names(await eddie.get('/api/v1/projects?archived=include')), ['Vault'], 'still readable with archived=include')
  t.same(names(await eddie.get('/api/v1/projects?externalItemId=vault-1')), ['Vault'], 'still found by lookup')

  refused(t, await eddie.patch(path, { name: 'Renamed' }), 403, 'PROJECT_ARCHIVED', 'editor renames an archived project')
  refused(t, await adam.patch(path, { name: 'Renamed' }), 403, 'PROJECT_ARCHIVED', 'admin renames without restoring')
  refused(t, await adam.patch(path, { description: null }), 403, 'PROJECT_ARCHIVED', 'clearing the description')
  refused(t, await adam.patch(path, { externalItemId: null }), 403, 'PROJECT_ARCHIVED', 'releasing the externalItemId')
  refused(t, await adam.patch(path, { name: 'Renamed', archived: true }), 403, 'PROJECT_ARCHIVED', 'renaming while staying archived')

  const still = (await eddie.get('/api/v1/projects?externalItemId=vault-1')).body.projects[0]
  t.equal(still.name, 'Vault', 'refused writes changed nothing')
  t.type(still.archivedAt, 'number', 'still archived')

  const dup = await as('olive@acme.test').post('/api/v1/projects', { name: 'Copy', externalItemId: 'vault-1' })
  refused(t, dup, 409, 'PROJECT_DUPLICATE_EXTERNAL_ID', 'an archived project keeps its externalItemId')
  t.equal(dup.body.data.key, 'VAULT')

  const restored = await as('olive@acme.test').patch(path, { archived: false, name: 'New' })
  t.equal(restored.status, 200, 'restore and rename in one PATCH: restore applies first')
  t.equal(restored.body.project.name, 'New')
  t.notOk('archivedAt' in restored.body.project, 'restored')
  t.same(names(await eddie.get('/api/v1/projects')), ['New'], 'back in the default list')

  const renamedAndArchived = await adam.patch(path, { name: 'X', archived: true })
  t.equal(renamedAndArchived.status, 200, 'rename and archive: the archive applies last')
  t.equal(renamedAndArchived.body.project.name, 'X')
  t.type(renamedAndArchived.body.project.archivedAt, 'number')
  t.same(names(await eddie.get('/api/v1/projects?archived=only')), ['X'])

  const restoredOnly = await adam.patch(path, { archived: false })
  t.equal(restoredOnly.status, 200, 'restore alone')
  t.notOk('archivedAt' in restoredOnly.body.project)
  t.equal((await eddie.patch(path, { description: 'writable again' })).status, 200, 'writes work after restore')
})

t.test('PATCH fields: description null clears, externalItemId null releases, duplicates are refused', async (t) => {
  const { as, projects } = await world(t, {
    projects: [
      project('First', { key: 'FIR', description: 'about first', externalItemId: 'shared-id' }),
      project('Second', { key: 'SEC' }),
    ],
  })
  const olive = as('olive@acme.test')
  const first = `/api/v1/projects/${projects.First!}`
  const second = `/api/v1/projects/${projects.Second!}`

  const described = await olive.patch(second, { description: 'about second' })
  t.equal(described.status, 200)
  t.equal(described.body.project.description, 'about second')
  const cleared = await olive.patch(first, { description: null })
  t.equal(cleared.status, 200)
  t.equal(cleared.body.project.description, null, 'description null clears')
  t.equal(cleared.body.project.name, 'First', 'fields not sent stay as they were')
  t.equal(cleared.body.project.externalItemId, 'shared-id')

  const dup = await olive.patch(second, { externalItemId: ' shared-id ' })
  refused(t, dup, 409, 'PROJECT_DUPLICATE_EXTERNAL_ID', 'PATCH to a taken externalItemId')
  t.equal(dup.body.data.key, 'FIR', 'data.key names the holder')
  const secondNow = (await olive.get('/api/v1/projects')).body.projects.find((p: { key: string }) => p.key === 'SEC')
  t.equal(secondNow.externalItemId, null, 'the refused PATCH wrote nothing')
  t.equal(secondNow.description, 'about second')

  const same = await olive.patch(first, { externalItemId: 'shared-id' })
  t.equal(same.status, 200, 'a project may re-send its own externalItemId')

  const released = await olive.patch(first, { externalItemId: null })
  t.equal(released.status, 200)
  t.equal(released.body.project.externalItemId, null, 'null releases it')
  t.same((await olive.get('/api/v1/projects?externalItemId=shared-id')).body.projects, [], 'lookup no longer finds it')

  const taken = await olive.patch(second, { externalItemId: 'shared-id' })
  t.equal(taken.status, 200, 'another project can take a released externalItemId')
  t.equal(taken.body.project.externalItemId, 'shared-id')
  t.same(ids(await olive.get('/api/v1/projects?externalItemId=shared-id')), [projects.Second!])

  const normalized = await olive.patch(first, { externalItemId: '  cafe\u0301 ' })
  t.equal(normalized.body.project.externalItemId, 'caf\u00e9', 'PATCH stores externalItemId trimmed and NFC-normalized')
  refused(t, await olive.patch(first, { externalItemId: '   ' }), 400, 'INVALID_BODY', 'blank externalItemId')

  const created = await olive.post('/api/v1/projects', { name: 'Third', externalItemId: 'third-id' })
  t.equal(created.status, 201)
  t.equal((await olive.patch(`/api/v1/projects/${created.body.project.id}`, { externalItemId: null })).status, 200)
  t.equal((await olive.post('/api/v1/projects', { name: 'Fourth', externalItemId: 'third-id' })).status, 201,
    'a released externalItemId can be used by a new project')
})

t.test('DELETE: 204 and gone; refusals for access, legal hold and a bad mode', async (t) => {
  const { as, service, projects } = await world(t, {
    projects: [
      project('Doomed', { externalItemId: 'doomed-1', access: [{ email: 'max@acme.test', level: 'read' }] }),
      project('ReadOnly', { access: [{ email: 'eddie@acme.test', level: 'read' }] }),
      project('Held', { access: [{ email: 'eddie@acme.test', level: 'edit' }] }),
      project('Detached'),
      project('Private'),
      project('Shelved'),
    ],
  })
  const olive = as('olive@acme.test')
  const path = (name: string) => `/api/v1/projects/${projects[name]!}`

  refused(t, await as('max@acme.test').del(path('Doomed')), 403, 'ROLE_FORBIDDEN', 'read-only member deletes')
  refused(t, await as('eddie@acme.test').del(path('ReadOnly')), 403, 'ROLE_FORBIDDEN', 'read-only editor deletes')
  refused(t, await as('max@acme.test').del(path('Private')), 404, 'NOT_FOUND', 'invisible project')
  refused(t, await as('eddie@acme.test').del(path('Private')), 404, 'NOT_FOUND', 'invisible project, editor')
  refused(t, await olive.del('/api/v1/projects/not-a-uuid'), 404, 'NOT_FOUND', 'malformed id')
  refused(t, await olive.del('/api/v1/projects/00000000-0000-4000-8000-000000000000'), 404, 'NOT_FOUND', 'absent project')
  refused(t, await olive.del(path('Doomed'), { mode: 'bogus' }), 400, 'INVALID_BODY', 'unknown mode')
  refused(t, await olive.del(path('Doomed'), { mode: 'detach', force: true }), 400, 'INVALID_BODY', 'unknown body key')
  t.equal((await olive.get('/api/v1/projects')).body.projects.length, 6, 'no refused delete removed anything')

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

  await service.db.owner`update app.projects set legal_hold_at = now() where id = ${projects.Held!}`
  const held = await as('eddie@acme.test').del(path('Held'))
  refused(t, held, 409, 'PROJECT_LEGAL_HOLD', 'legal hold')
  refused(t, await olive.del(path('Held'), { mode: 'detach' }), 409, 'PROJECT_LEGAL_HOLD', 'legal hold, detach')
  t.ok(names(await olive.get('/api/v1/projects')).includes('Held'), 'a held project is still there')
  const [audited] = await service.db.owner<{ count: number }[]>`
    select count(*)::int as count from app.audit_log where action = 'project.deleted' and subject_id = ${projects.Held!}`
  t.equal(audited?.count, 0, 'nothing written for a refused delete')

  const detached = await olive.del(path('Detached'), { mode: 'detach' })
  t.equal(detached.status, 204, 'detach mode')
  t.notOk(names(await olive.get('/api/v1/projects?archived=include')).includes('Detached'))
  t.equal((await olive.del(path('Shelved'), { mode: 'cascade' })).status, 204, 'explicit cascade mode')

  const mine = await as('eddie@acme.test').post('/api/v1/projects', { name: 'Eddie Temp' })
  t.equal((await as('eddie@acme.test').del(`/api/v1/projects/${mine.body.project.id}`)).status, 204, 'the creator deletes')

  const archived = await olive.post('/api/v1/projects', { name: 'Archived Then Deleted' })
  await olive.patch(`/api/v1/projects/${archived.body.project.id}`, { archived: true })
  t.equal((await olive.del(`/api/v1/projects/${archived.body.project.id}`)).status, 204, 'an archived project can be deleted')
})

t.test('DELETE cascade budget: 5 per user per minute, then 429 with Retry-After, refilled a minute later', async (t) => {
  const seeded = Array.from({ length: 10 }, (_, i) => project(`Gone ${i}`))
  const { as, service, projects } = await world(t, { projects: seeded })
  const start = Date.parse('2031-03-04T05:06:07Z')
  await pinClock(service.db.owner, start)
  const olive = as('olive@acme.test')
  const path = (i: number) => `/api/v1/projects/${projects[`Gone ${i}`]!}`

  for (let i = 0; i < 5; i++) t.equal((await olive.del(path(i))).status, 204, `cascade delete ${i + 1}`)
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

  t.equal((await olive.del(path(6), { mode: 'detach' })).status, 204, 'detach does not draw on the cascade budget')
  t.equal((await as('adam@acme.test').del(path(7))).status, 204, 'another user has their own budget')

  await pinClock(service.db.owner, start + 61_000)
  t.equal((await olive.del(path(5))).status, 204, 'a minute later a cascade delete works again')
  t.notOk(names(await olive.get('/api/v1/projects')).includes('Gone 5'))
})

t.test('writes answer X-Service-Api-Version and X-Request-Id, echoing an acceptable X-Request-Id', async (t) => {
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
  const generated = await service.request('POST', '/api/v1/projects', { key, body: { name: 'Generated' }, headers: { 'x-request-id': 'not ok!' } })
  const replaced = generated.headers.get('x-request-id')
  t.ok(replaced, 'an unacceptable request id is replaced')
  t.not(replaced, 'not ok!')
})
