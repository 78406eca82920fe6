// A real headless Chromium (Debian's, never a downloaded one) driven by playwright-core,
// with an accessibility check by axe-core and a screenshot of each page it checks.
import { mkdirSync, readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import path from 'node:path'
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core'
import type { Test } from 'tap'

export const CHROMIUM = '/usr/bin/chromium'
/** Where the test run leaves its screenshots (kept out of git with .data/). */
export const SCREENSHOTS = path.resolve('.data/screenshots')

const axeSource = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8')

export async function launch(t: Test): Promise<{ browser: Browser; context: BrowserContext }> {
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-quic',
      '--no-first-run', '--disable-component-update', '--disable-sync'],
  })
  // The pages forbid every script (their CSP); axe is injected past it, as a tool would.
  const context = await browser.newContext({ bypassCSP: true })
  t.teardown(() => browser.close())
  return { browser, context }
}

export interface AxeViolation { id: string; impact: string | null; help: string; nodes: { target: string[] }[] }

/** Screenshots the page under name and answers axe-core's violations (WCAG 2.1 A and AA). */
export async function inspect(page: Page, name: string): Promise<AxeViolation[]> {
  mkdirSync(SCREENSHOTS, { recursive: true })
  await page.screenshot({ path: path.join(SCREENSHOTS, `${name}.png`), fullPage: true })
  await page.evaluate(axeSource)
  const result = await page.evaluate(async () => {
    const axe = (globalThis as unknown as { axe: { run: (context: unknown, options: unknown) => Promise<{ violations: unknown[] }> } }).axe
    return axe.run((globalThis as unknown as { document: unknown }).document, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice'] } })
  })
  return (result.violations as AxeViolation[]).map((v) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map((n) => ({ target: n.target })) }))
}
