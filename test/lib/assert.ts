// Assertions shared by the HTTP tests.
import type { Test } from 'tap'

/** A coded refusal: its status and its code (the body is shown when the code differs). */
export function refused(t: Test, res: { status: number; body: any }, status: number, code: string, label: string): void {
  t.equal(res.status, status, `${label}: status`)
  t.equal(res.body?.code, code, `${label}: code (${JSON.stringify(res.body)})`)
}
