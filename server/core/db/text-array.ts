// A text[] parameter written as one array literal. The driver's own array serializer
// runs two regular expressions over every element; a search sends up to 1,000 file
// ids on every request, which almost never hold a character to escape.

/**
 * The literal PostgreSQL reads back as exactly these strings: every element quoted
 * (so an element spelt NULL stays a string, and commas, braces and spaces are text),
 * and a quote or backslash escaped, looked for once over the whole list.
 */
export function textArrayLiteral(values: readonly string[]): string {
  if (values.length === 0) return '{}'
  if (!/["\\]/.test(values.join(''))) return `{"${values.join('","')}"}`
  return `{${values.map((value) => `"${value.replace(/[\\"]/g, '\\$&')}"`).join(',')}}`
}
