// Request connections log in as a role that can be `api` and nothing else: whatever
// a statement on one of them tries, it never becomes the owner. And functions are
// the owner's alone until a function file grants one to api.
import t, { type Test } from 'tap'
import { freshDatabase, sqlState } from '../lib/db.ts'
import { REQUEST_LOGIN, requestDatabaseUrl, requestLoginProblem, requestPool, type Sql } from '../../server/core/db/connection.ts'
import { withDatabase } from '../lib/db.ts'

const db = await freshDatabase()
t.teardown(() => db.drop())
const owner = (await db.owner<{ owner: string }[]>`select nspowner::regrole::text as owner from pg_namespace where nspname = 'app'`)[0]!.owner

const code = (work: () => Promise<unknown>) => sqlState(work)

/** A request connection of its own, so a changed session role never reaches another test. */
async function requestConnection(t: Test, mode: 'session' | 'transaction' = 'session'): Promise<Sql> {
  const pool = requestPool(db.url, 1, undefined, undefined, mode)
  t.teardown(() => pool.end())
  return pool
}

t.test('the request URL: the owner\'s with the request login, unless one is configured', async (t) => {
  const derived = new URL(requestDatabaseUrl('postgres://postgres:s3cr%40t@db.example:5433/tale?sslmode=require'))
  t.equal(derived.username, REQUEST_LOGIN)
  t.equal(derived.password, 's3cr%40t', 'the owner\'s password, still encoded')
  t.equal(derived.host, 'db.example:5433')
  t.equal(derived.pathname, '/tale')
  t.equal(derived.searchParams.get('sslmode'), 'require')
  t.equal(requestDatabaseUrl('postgres://postgres@h/x', 'postgres://reader:pw@h/x'), 'postgres://reader:pw@h/x')
})

t.test('a request connection logs in as the request login and acts as api', async (t) => {
  const sql = await requestConnection(t)
  const [session] = await sql`select session_user::text as login, current_user::text as acting`
  t.same(session, { login: REQUEST_LOGIN, acting: 'api' })
  const [role] = await db.owner`
    select rolsuper, rolinherit, rolcreaterole, rolcreatedb, rolbypassrls, rolcanlogin from pg_roles where rolname = ${REQUEST_LOGIN}`
  t.same(role, { rolsuper: false, rolinherit: false, rolcreaterole: false, rolcreatedb: false, rolbypassrls: false, rolcanlogin: true })
  const memberOf = await db.owner`
    select b.rolname from pg_auth_members m join pg_roles r on r.oid = m.member join pg_roles b on b.oid = m.roleid
     where r.rolname = ${REQUEST_LOGIN}`
  t.same(memberOf.map((r) => r.rolname), ['api'], 'a member of api and of nothing else')
})

t.test('SET ROLE to the owner fails from a request connection', async (t) => {
  const sql = await requestConnection(t)
  t.equal(await code(() => sql.unsafe(`set role "${owner}"`)), '42501')
  t.equal(await code(() => sql.unsafe(`set session authorization "${owner}"`)), '42501')
  t.equal(await code(() => sql.begin((tx) => tx.unsafe(`set local role "${owner}"`))), '42501')
})

t.test('RESET ROLE returns to api, and SET ROLE NONE to a login with no privilege', async (t) => {
  const sql = await requestConnection(t)
  await sql`reset role`
  const [reset] = await sql`select current_user::text as role`
  t.equal(reset!.role, 'api', 'the role the connection started with is what RESET ROLE restores')
  await sql`set role none`
  const [bare] = await sql`select current_user::text as role`
  t.equal(bare!.role, REQUEST_LOGIN)
  t.equal(await code(() => sql`select count(*) from app.projects`), '42501', 'no table is readable')
  t.equal(await code(() => sql`select * from app.deployment_secrets`), '42501')
  t.equal(await code(() => sql`select app.now()`), '42501', 'no function is callable')
  t.equal(await code(() => sql.unsafe(`set role "${owner}"`)), '42501', 'and the owner is still out of reach')
  await sql`set role api`
  const [back] = await sql`select current_user::text as role`
  t.equal(back!.role, 'api', 'api is all it can become')
})

// Through a transaction pooler no startup option arrives: the login's own role
// defaults (db/schema/0028_request_login_defaults.sql) make it api, and hold it to
// api as the startup option does.
t.test('with no startup option, the request login acts as api with generic plans, and can become nothing else', async (t) => {
  const sql = await requestConnection(t, 'transaction')
  const [session] = await sql`select session_user::text as login, current_user::text as acting, current_setting('plan_cache_mode') as plans`
  t.same(session, { login: REQUEST_LOGIN, acting: 'api', plans: 'force_generic_plan' })
  t.equal(await code(() => sql.unsafe(`set role "${owner}"`)), '42501')
  t.equal(await code(() => sql.unsafe(`set session authorization "${owner}"`)), '42501')
  await sql`set role none`
  t.equal((await sql`select current_user::text as role`)[0]!.role, REQUEST_LOGIN)
  t.equal(await code(() => sql`select count(*) from app.projects`), '42501', 'the bare login reads nothing')
  await sql`reset role`
  t.equal((await sql`select current_user::text as role`)[0]!.role, 'api', 'RESET ROLE restores the default, api')
  t.equal(await requestLoginProblem(db.url), null, 'the start-up check finds nothing wrong')
})

t.test('the start-up check names a request login without the defaults', async (t) => {
  const login = `tale_bare_login_${Math.random().toString(16).slice(2, 10)}`
  await db.owner.unsafe(`create role "${login}" login noinherit nobypassrls`)
  t.teardown(() => db.owner.unsafe(`drop role if exists "${login}"`))
  await db.owner.unsafe(`grant api to "${login}"`)
  const bareUrl = new URL(withDatabase(db.url, db.name))
  bareUrl.username = login
  const problem = await requestLoginProblem(db.url, bareUrl.toString())
  t.match(problem, `the request login ${login} logs in as ${login} with plan_cache_mode auto, not as api with force_generic_plan`)
  t.match(problem, `alter role ${login} set role = 'api'`)
})

t.test('a new function is not executable by api until a file grants it', async (t) => {
  for (const schema of ['app', 'api']) {
    await db.owner.unsafe(`create function ${schema}.privilege_probe() returns integer language sql as 'select 1'`)
    const [before] = await db.owner.unsafe(
      `select has_function_privilege('api', '${schema}.privilege_probe()', 'execute') as api,
              has_function_privilege('public', '${schema}.privilege_probe()', 'execute') as everyone`)
    t.same(before, { api: false, everyone: false }, `${schema}: neither api nor PUBLIC may execute it`)
    const sql = await requestConnection(t)
    t.equal(await code(() => sql.unsafe(`select ${schema}.privilege_probe()`)), '42501', `${schema}: a request cannot call it`)
    await db.owner.unsafe(`grant execute on function ${schema}.privilege_probe() to api`)
    t.same(await sql.unsafe(`select ${schema}.privilege_probe() as n`), [{ n: 1 }], `${schema}: granted, it is callable`)
  }
})

t.test('no function of the service is executable by PUBLIC', async (t) => {
  const open = await db.owner<{ name: string }[]>`
    select n.nspname || '.' || p.proname as name from pg_proc p join pg_namespace n on n.oid = p.pronamespace
     where n.nspname in ('app', 'api') and has_function_privilege('public', p.oid, 'execute')`
  t.same(open.map((f) => f.name), [])
})
