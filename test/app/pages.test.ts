// The app's pages in a real browser: signing in with a password and a TOTP code,
// making an API key, switching organization, signing out; each page screenshotted and
// checked by axe-core for WCAG 2.1 A and AA.
import t from 'tap'
import { world } from '../lib/world.ts'
import { acme, person } from '../lib/fixtures.ts'
import { totpCode } from '../lib/browser.ts'
import { inspect, launch } from '../lib/chromium.ts'

const users = [
  ...acme().users!.filter((u) => u.email !== 'dev@acme.test'),
  { ...person('dev@acme.test', [{ org: 'acme', role: 'developer' }, { org: 'globex', role: 'member' }]), name: 'Dana Dev', password: 'pw-dev' },
]

t.test('a person signs in, sets up a second factor, makes a key and signs out, every page accessible', async (t) => {
  const { service } = await world(t, { seed: { users } })
  const { context } = await launch(t)
  const page = await context.newPage()
  const accessible = async (name: string) => t.same(await inspect(page, name), [], `${name}: no accessibility violations`)

  await page.goto(`${service.url}/app/settings`)
  t.match(page.url(), /\/app\/sign-in\?return=%2Fapp%2Fsettings$/, 'the settings send a stranger to the sign-in page')
  await accessible('sign-in')
  await page.getByLabel('Email', { exact: true }).fill('dev@acme.test')
  await page.getByLabel('Password', { exact: true }).fill('wrong')
  await page.getByRole('button', { name: 'Sign in' }).click()
  t.match(await page.getByRole('alert').textContent(), /do not match an account/)
  await accessible('sign-in-refused')
  await page.getByLabel('Password', { exact: true }).fill('pw-dev')
  await page.getByRole('button', { name: 'Sign in' }).click()
  t.match(page.url(), /\/app\/settings$/)
  t.match(await page.locator('main').textContent(), /Acme: developer/)
  await accessible('settings')

  await page.getByRole('link', { name: 'Security', exact: true }).click()
  await accessible('security-setup')
  const secret = (await page.locator('#totp-secret-text').textContent())!.trim()
  await page.getByLabel('Code from the app', { exact: true }).fill(totpCode(secret))
  await page.getByRole('button', { name: 'Turn on' }).click()
  t.match(await page.locator('main').textContent(), /An authenticator app is set up/)
  await accessible('security-on')

  await page.getByRole('button', { name: 'Sign out' }).click()
  t.match(page.url(), /\/app\/sign-in$/)
  await page.goto(`${service.url}/app/sign-in?return=/app/settings/api-keys`)
  await page.getByLabel('Email', { exact: true }).fill('dev@acme.test')
  await page.getByLabel('Password', { exact: true }).fill('pw-dev')
  await page.getByRole('button', { name: 'Sign in' }).click()
  t.match(page.url(), /\/app\/sign-in\/totp\?return=/, 'the second factor is asked')
  await accessible('second-factor')
  await page.getByLabel('Six-digit code', { exact: true }).fill(totpCode(secret, 1))
  await page.getByRole('button', { name: 'Continue' }).click()
  t.match(page.url(), /\/app\/settings\/api-keys$/)
  await accessible('api-keys')

  await page.getByLabel('Name', { exact: true }).fill('Laptop')
  await page.getByRole('button', { name: 'Create key' }).click()
  const key = (await page.getByLabel('The new API key', { exact: true }).textContent())!.trim()
  t.match(key, /^tale_/)
  await accessible('api-key-created')
  t.equal((await service.request('GET', '/api/v1/me', { key, org: 'acme' })).status, 200, 'the key shown works')

  await page.getByLabel('Organization', { exact: true }).selectOption({ label: 'Globex' })
  await page.getByRole('button', { name: 'Switch' }).click()
  t.match(await page.locator('main').textContent(), /Globex: member/)
  await page.getByRole('button', { name: 'Sign out' }).click()
  await page.goto(`${service.url}/app/settings`)
  t.match(page.url(), /\/app\/sign-in/, 'signed out')
})

t.test('an owner\'s competence and identity client pages are accessible', async (t) => {
  const owners = users.map((u) => (u.email === 'olive@acme.test' ? { ...u, password: 'pw-olive' } : u))
  const { service, seeded } = await world(t, { seed: { users: owners } })
  const { context } = await launch(t)
  const page = await context.newPage()
  const accessible = async (name: string) => t.same(await inspect(page, name), [], `${name}: no accessibility violations`)
  await page.goto(`${service.url}/app/sign-in`)
  await page.getByLabel('Email', { exact: true }).fill('olive@acme.test')
  await page.getByLabel('Password', { exact: true }).fill('pw-olive')
  await page.getByRole('button', { name: 'Sign in' }).click()

  await page.goto(`${service.url}/app/settings/competences?userId=${seeded.users['max@acme.test']!.id}`)
  await page.getByLabel('Evidence', { exact: true }).fill('Runs the weekly export')
  await page.getByRole('button', { name: 'Grant', exact: true }).click()
  t.match(await page.locator('main').textContent(), /Runs the weekly export/)
  await accessible('competences')

  await page.getByRole('link', { name: 'Identity clients', exact: true }).click()
  await page.getByLabel('Key (letters, digits, ".", "_" or "-")', { exact: true }).fill('crm')
  await page.getByLabel('Name', { exact: true }).fill('CRM')
  await page.getByLabel('Callback address (exact; https, or http on this machine)', { exact: true }).fill('https://crm.example/callback')
  await page.getByRole('button', { name: 'Register', exact: true }).click()
  t.match(await page.getByLabel('Client secret of CRM').textContent(), /\S{20,}/)
  await accessible('identity-clients')
})
