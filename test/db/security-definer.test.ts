// SECURITY DEFINER functions read and write past row-level security, so each one is
// listed here with the reason policies cannot express its rule, and named in the
// header of the policy file of every table it reaches. A new one fails this test until
// it is listed, explained and named.
import { readFileSync } from 'node:fs'
import path from 'node:path'
import t from 'tap'
import { dbRoot } from '../../server/core/db/migrate.ts'
import { freshDatabase } from '../lib/db.ts'

const allowlist: Record<string, string> = {
  'app.authenticate(jsonb)': 'the caller-less path: before it runs there is no caller whose policies could admit the key lookup',
  'app.selectable_organizations(uuid)': 'the organizations a key\'s user may select, named in refusals before any organization is selected',
  'app.take_tokens(jsonb)': 'rate buckets are shared by every caller, and by callers not yet authenticated',
  'app.forget_idle_rate_buckets()': 'the worker\'s cleanup of every holder\'s idle buckets',
  'app.cursor_issue(text,jsonb,jsonb)': 'signs cursors with the deployment key the caller must never read',
  'app.cursor_read(text,text,jsonb)': 'verifies cursors with the deployment key the caller must never read',
  'app.enqueue(text,jsonb,text,interval)': 'the job queue belongs to graphile-worker; the request role may add work through this door only',
  'app.project_key_holding_external_id(text)': 'PROJECT_DUPLICATE_EXTERNAL_ID names the holder of an externalItemId the caller may not see',
  'app.uploads_lapsed()': 'whether any upload of the organization, not only the caller\'s, is due for sweeping',
  'app.automation_install_projects(uuid)': 'a run start binds to every install of its automation, also in projects the caller cannot see',
  'app.trigger_last_run(uuid,timestampwithtimezone)': 'a trigger\'s last run reads the same for every member who reads the trigger; only its id and instant leave, never the run',
  'app.task_notify(app.tasks,uuid,text,jsonb)': 'a task notification goes to another member only when their own grants and teams, which the caller\'s policies hide, let them see the project',
  'app.sign_in_lookup(text)': 'the caller-less sign-in path: the person and their password hash, before any session exists',
  'app.session_open(uuid,text,boolean,text,text,text)': 'opens a session after a right password, before any caller exists, and ends the one the browser held',
  'app.session_pending_factor(text)': 'the second factor a pending sign-in must prove: no caller exists until it is proven',
  'app.session_complete(text,text,bigint)': 'completes a pending sign-in with a verified code, once per time step, before any caller exists',
  'app.session_close(text)': 'sign-out by the cookie alone, whatever the session\'s state',
  'app.session_holder(text)': 'the caller-less session path: resolves a cookie to its person for app.authenticate and the identity issuer',
  'app.totp_status()': 'whether the signed-in person has a second factor: the factor\'s secret is readable by no policy',
  'app.totp_set(text,bigint)': 'stores the signed-in person\'s own second factor, whose secret no policy may expose to the request role',
  'app.totp_remove()': 'removes the signed-in person\'s own second factor',
  'app.webhook_deliver(jsonb)': 'the caller-less webhook path: no caller exists until the URL token names a trigger, and only that trigger\'s organization is reached',
  'app.issuer_client(text)': 'the identity issuer reads a client by its id at authorization and token requests, where no caller exists',
  'app.issuer_account(text,uuid,boolean)': 'the identity issuer decides what it says about a token\'s person by the client\'s organization, with no caller',
  'app.issuer_store(text,text,text,jsonb,integer)': 'oidc-provider\'s adapter: codes and tokens are presented by clients, not by a caller policies could admit',
  'app.index_queue_platform(text,uuid,uuid,uuid,text,bigint,jsonb,regconfig)': 'a document\'s or entry\'s write queues it for indexing in its own transaction; the index row is the pipeline\'s, which no member may write',
  'app.website_schedule(uuid,interval)': 'adding or syncing a website schedules its scan job in graphile-worker\'s tables, which the request role may not write; only the caller\'s own organization\'s websites',
  'app.website_unschedule(uuid)': 'deleting a website removes its pending scan job from graphile-worker\'s tables, only once the website is gone',
  'app.issuer_keys(jsonb)': 'the issuer\'s private signing keys are readable through this door only, never by a query of the request role',
}

const db = await freshDatabase()
t.teardown(() => db.drop())

const definers = await db.owner<{ name: string; source: string; config: string[] | null }[]>`
  select n.nspname || '.' || p.proname || '(' || oidvectortypes(p.proargtypes) || ')' as name,
         p.prosrc as source, p.proconfig as config
    from pg_proc p join pg_namespace n on n.oid = p.pronamespace
   where p.prosecdef and n.nspname not in ('pg_catalog', 'information_schema', 'graphile_worker')`
const normalized = (name: string) => name.replaceAll(' ', '')

t.test('every SECURITY DEFINER function of the catalog is on the allowlist', async (t) => {
  t.ok(definers.length >= 5, 'the catalog lists the definer functions')
  const unlisted = definers.map((d) => normalized(d.name)).filter((name) => !(name in allowlist))
  t.same(unlisted, [], 'a new SECURITY DEFINER function is listed here with its reason first')
  const gone = Object.keys(allowlist).filter((name) => !definers.some((d) => normalized(d.name) === name))
  t.same(gone, [], 'the allowlist names no function that is no longer a definer')
})

t.test('each pins its search_path, so no caller\'s schema can stand in for its objects', async (t) => {
  for (const definer of definers) {
    t.ok(definer.config?.some((setting) => setting.startsWith('search_path=')), normalized(definer.name))
  }
})

t.test('the policy file of every table a definer function reaches names it in its header', async (t) => {
  const tables = (await db.owner<{ name: string }[]>`
    select c.relname as name from pg_class c join pg_namespace n on n.oid = c.relnamespace
     where n.nspname = 'app' and c.relkind in ('r', 'p')`).map((r) => r.name)
  const header = (table: string) => {
    const text = readFileSync(path.join(dbRoot, 'policies', `${table}.sql`), 'utf8')
    return text.split('\n').filter((line, i, lines) => lines.slice(0, i + 1).every((l) => l.startsWith('--'))).join('\n')
  }
  let checked = 0
  for (const definer of definers) {
    const short = normalized(definer.name).replace(/\(.*$/, '')
    const reached = [...new Set([...definer.source.matchAll(/\bapp\.([a-z_]+)\b/g)].map((m) => m[1]!))]
      .filter((name) => tables.includes(name))
    for (const table of reached) {
      checked++
      t.match(header(table), new RegExp(`\\b${short.replace('.', '\\.')}\\b`), `db/policies/${table}.sql names ${short}`)
    }
  }
  t.ok(checked >= 8, `the tables reached were found in the function bodies (${checked})`)
})

t.test('every policy file opens with the definer functions that pass it, or none', async (t) => {
  const tables = await db.owner<{ name: string }[]>`
    select c.relname as name from pg_class c join pg_namespace n on n.oid = c.relnamespace
     where n.nspname = 'app' and c.relkind in ('r', 'p') order by 1`
  for (const { name } of tables) {
    const text = readFileSync(path.join(dbRoot, 'policies', `${name}.sql`), 'utf8')
    t.match(text, /^(--.*\n)*-- Past these policies: /, `db/policies/${name}.sql exists and its header says who passes it`)
  }
})
