// What a crawled HTML page says: its readable main content as plain text, and what
// the crawl needs from the whole document (links, canonical, robots directives).
// Readability rewrites the DOM it reads, so the document is parsed twice: once for
// the links and directives of the page as served, once for Readability.
import { parseHTML } from 'linkedom'
import { Readability } from '@mozilla/readability'

export type ExtractedPage = {
  title: string | null
  text: string
  wordCount: number
  excerpt: string | null
  language: string | null
  links: string[]
  meetsThreshold: boolean
  canonical: string | null
  noindex: boolean
  nofollow: boolean
}

// linkedom's DOM is typed for the browser; only the parts read here are named.
type Node = { nodeType: number; nodeName: string; textContent: string | null; childNodes: ArrayLike<Node> }
type Element = Node & {
  tagName: string
  getAttribute(name: string): string | null
  querySelector(selector: string): Element | null
  querySelectorAll(selector: string): ArrayLike<Element>
  remove(): void
}
type Document = Element & { documentElement: Element; body: Element | null; title: string }

const TEXT_NODE = 3
const ELEMENT_NODE = 1

// Elements that start a new paragraph of the plain text.
const BLOCKS = new Set(['address', 'article', 'aside', 'blockquote', 'dd', 'details', 'div', 'dl', 'dt', 'fieldset', 'figcaption',
  'figure', 'footer', 'form', 'h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'header', 'hr', 'li', 'main', 'nav', 'ol', 'p', 'pre', 'section',
  'summary', 'table', 'tr', 'ul', 'br', 'caption', 'td', 'th'])

// Removed before the fallback reads the body: never prose, or the site's furniture.
const NOT_CONTENT = 'script, style, noscript, template, nav, svg, iframe, object'

const words = new Intl.Segmenter(undefined, { granularity: 'word' })

export function extractPage(html: string, url: string, wordCountThreshold: number): ExtractedPage {
  const source = withDocumentShell(html)
  const { document } = parseHTML(source) as unknown as { document: Document }
  const base = baseUrl(document, url)
  const directives = robotsDirectives(document)
  const language = document.documentElement.getAttribute('lang')?.trim() || null
  const canonical = canonicalUrl(document, base)
  const links = collectLinks(document, base)
  const description = metaContent(document, 'description')

  const { document: readable } = parseHTML(source) as unknown as { document: Document }
  // Readability keeps a short page's navigation as content; it is never the article.
  for (const element of Array.from(readable.querySelectorAll(NOT_CONTENT))) element.remove()
  let article: ReturnType<Readability<Node>['parse']> = null
  try {
    article = new Readability<Node>(readable as never, { serializer: (node) => node as unknown as Node }).parse()
  } catch {
    article = null
  }
  let text = article?.content ? plainText(article.content) : ''
  if (!text) {
    // The links document is done with, so the fallback may strip it.
    for (const element of Array.from(document.querySelectorAll(NOT_CONTENT))) element.remove()
    text = document.body ? plainText(document.body) : ''
  }
  const wordCount = countWords(text)
  return {
    title: article?.title?.trim() || document.title?.trim() || null,
    text,
    wordCount,
    excerpt: article?.excerpt?.trim() || description,
    language,
    links,
    meetsThreshold: wordCount >= wordCountThreshold,
    canonical,
    noindex: directives.has('noindex') || directives.has('none'),
    nofollow: directives.has('nofollow') || directives.has('none'),
  }
}

/**
 * The page with <html>, <head> and <body> present: linkedom builds no body for a page
 * that leaves them out (browsers imply them), and then sees neither links nor text.
 */
function withDocumentShell(html: string): string {
  if (/<html[\s>]/i.test(html) && /<body[\s>]/i.test(html)) return html
  const inner = html.replace(/<!doctype[^>]*>|<\/?html[^>]*>|<\/?body[^>]*>/gi, '')
  const headEnd = /<\/head\s*>/i.exec(inner)
  const head = headEnd ? inner.slice(0, headEnd.index + headEnd[0].length) : '<head></head>'
  const body = headEnd ? inner.slice(headEnd.index + headEnd[0].length) : inner
  const lang = /<html[^>]*?\slang\s*=\s*["']?([^"'\s>]+)/i.exec(html)?.[1]
  return `<!doctype html><html${lang ? ` lang="${lang}"` : ''}>${head}<body>${body}</body></html>`
}

export function countWords(text: string): number {
  // Word segmentation rather than spaces, so text in languages written without
  // spaces between words is counted too.
  let count = 0
  for (const segment of words.segment(text)) if (segment.isWordLike) count++
  return count
}

function baseUrl(document: Document, url: string): URL {
  const href = document.querySelector('base[href]')?.getAttribute('href')
  try {
    return new URL(href ?? url, url)
  } catch {
    return new URL(url)
  }
}

function tokens(value: string | null): string[] {
  return (value ?? '').toLowerCase().split(/[\s,]+/).filter(Boolean)
}

function robotsDirectives(document: Document): Set<string> {
  const found = new Set<string>()
  for (const meta of Array.from(document.querySelectorAll('meta[name]'))) {
    if (meta.getAttribute('name')?.trim().toLowerCase() !== 'robots') continue
    for (const token of tokens(meta.getAttribute('content'))) found.add(token)
  }
  return found
}

function metaContent(document: Document, name: string): string | null {
  for (const meta of Array.from(document.querySelectorAll('meta[name]'))) {
    if (meta.getAttribute('name')?.trim().toLowerCase() === name) return meta.getAttribute('content')?.trim() || null
  }
  return null
}

function httpUrl(href: string | null, base: URL): string | null {
  if (!href) return null
  try {
    const url = new URL(href.trim(), base)
    if (url.protocol !== 'http:' && url.protocol !== 'https:') return null
    url.hash = ''
    return url.href
  } catch {
    return null
  }
}

function canonicalUrl(document: Document, base: URL): string | null {
  for (const link of Array.from(document.querySelectorAll('link[href]'))) {
    if (tokens(link.getAttribute('rel')).includes('canonical')) return httpUrl(link.getAttribute('href'), base)
  }
  return null
}

function collectLinks(document: Document, base: URL): string[] {
  const links = new Set<string>()
  for (const anchor of Array.from(document.querySelectorAll('a[href]'))) {
    if (tokens(anchor.getAttribute('rel')).includes('nofollow')) continue
    const url = httpUrl(anchor.getAttribute('href'), base)
    if (url) links.add(url)
  }
  return [...links]
}

/** The text of a subtree, one paragraph per block element, paragraphs separated by a blank line. */
function plainText(root: Node): string {
  const paragraphs: string[] = []
  let current = ''
  const endParagraph = () => {
    const paragraph = current.replace(/\s+/g, ' ').trim()
    if (paragraph) paragraphs.push(paragraph)
    current = ''
  }
  const walk = (node: Node) => {
    if (node.nodeType === TEXT_NODE) {
      current += node.textContent ?? ''
      return
    }
    if (node.nodeType !== ELEMENT_NODE) return
    const tag = node.nodeName.toLowerCase()
    if (tag === 'script' || tag === 'style' || tag === 'template' || tag === 'noscript') return
    const block = BLOCKS.has(tag)
    if (block) endParagraph()
    for (const child of Array.from(node.childNodes)) walk(child)
    if (block) endParagraph()
  }
  walk(root)
  endParagraph()
  return paragraphs.join('\n\n')
}
