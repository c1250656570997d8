/**
 * The HTML and CSS features a message's HTML uses, each with the lines it occurs on, named
 * by caniemail's feature slugs (`html-video`, `css-display-flex`, `css-at-media-prefers-color-scheme`).
 *
 * Message HTML is untrusted and may be megabytes: everything here is one pass with
 * `indexOf` (no regex that can rescan the rest of the input from every position, which is
 * quadratic on unclosed constructs), over at most MAX_CHECKED_CHARS.
 */

/** The part of the HTML that is checked; the page says so when a message is longer. */
export const MAX_CHECKED_CHARS = 1024 * 1024
/** Lines kept per feature (a newsletter repeats the same style hundreds of times). */
const LINES_KEPT = 5

export interface FoundFeature {
  slug: string
  /** 1-based lines of the HTML where it occurs (the first few), and how often in all. */
  lines: number[]
  count: number
}

const ELEMENTS: Record<string, string> = {
  abbr: 'html-abbr',
  acronym: 'html-acronym',
  address: 'html-address',
  audio: 'html-audio',
  base: 'html-base',
  bdi: 'html-bdi',
  blockquote: 'html-blockquote',
  code: 'html-code',
  del: 'html-del',
  dfn: 'html-dfn',
  dialog: 'html-dialog',
  form: 'html-form',
  hr: 'html-hr',
  link: 'html-link',
  marquee: 'html-marquee',
  meter: 'html-meter',
  object: 'html-object',
  picture: 'html-picture',
  pre: 'html-pre',
  progress: 'html-progress',
  rp: 'html-rp',
  rt: 'html-rt',
  ruby: 'html-ruby',
  select: 'html-select',
  small: 'html-small',
  strike: 'html-strike',
  style: 'html-style',
  svg: 'html-svg',
  textarea: 'html-textarea',
  video: 'html-video',
  wbr: 'html-wbr',
  map: 'html-image-maps',
  ul: 'html-lists',
  ol: 'html-lists',
  dl: 'html-lists',
}
for (const h of ['h1', 'h2', 'h3', 'h4', 'h5', 'h6']) ELEMENTS[h] = 'html-h1-h6'
for (const tag of [
  'article',
  'aside',
  'details',
  'figcaption',
  'figure',
  'footer',
  'header',
  'main',
  'mark',
  'nav',
  'section',
  'summary',
  'time',
])
  ELEMENTS[tag] = 'html-semantics'

const ATTRIBUTES: Record<string, string> = {
  align: 'html-align',
  background: 'html-background',
  cellpadding: 'html-cellpadding',
  cellspacing: 'html-cellspacing',
  dir: 'html-dir',
  hidden: 'html-hidden',
  lang: 'html-lang',
  loading: 'html-loading-attribute',
  popover: 'html-popover',
  required: 'html-required',
  role: 'html-role',
  srcset: 'html-srcset',
  target: 'html-target',
  valign: 'html-valign',
  inert: 'css-inert-attribute',
  'aria-describedby': 'html-aria-describedby',
  'aria-hidden': 'html-aria-hidden',
  'aria-label': 'html-aria-label',
  'aria-labelledby': 'html-aria-labelledby',
  'aria-live': 'html-aria-live',
}

const INPUT_TYPES = new Set(['checkbox', 'hidden', 'radio', 'reset', 'submit', 'text'])
const MEDIA_FEATURES = ['prefers-color-scheme', 'prefers-reduced-motion', 'hover', 'orientation', 'device-pixel-ratio']
const AT_RULES = ['font-face', 'import', 'keyframes', 'supports', 'media']
const FUNCTIONS: [string, string][] = [
  ['linear-gradient(', 'css-linear-gradient'],
  ['radial-gradient(', 'css-radial-gradient'],
  ['conic-gradient(', 'css-conic-gradient'],
  ['clamp(', 'css-function-clamp'],
  ['min(', 'css-function-min'],
  ['max(', 'css-function-max'],
  ['light-dark(', 'css-function-light-dark'],
  ['calc(', 'css-unit-calc'],
  ['var(--', 'css-variables'],
  ['rgba(', 'css-rgba'],
  ['rgb(', 'css-rgb'],
]

/**
 * Finds the features; `knownCss` is the set of caniemail slugs,
 * so a CSS property counts only when caniemail has data for it.
 */
export function findFeatures(fullHtml: string, knownSlugs: ReadonlySet<string>): FoundFeature[] {
  const html = fullHtml.length > MAX_CHECKED_CHARS ? fullHtml.slice(0, MAX_CHECKED_CHARS) : fullHtml
  const lower = html.toLowerCase()
  const lineStarts = [0]
  for (let at = html.indexOf('\n'); at !== -1; at = html.indexOf('\n', at + 1)) lineStarts.push(at + 1)
  const lineOf = (index: number) => {
    let low = 0
    let high = lineStarts.length - 1
    while (low < high) {
      const mid = (low + high + 1) >> 1
      if (lineStarts[mid]! <= index) low = mid
      else high = mid - 1
    }
    return low + 1
  }
  const found = new Map<string, FoundFeature>()
  const add = (slug: string, at: number) => {
    if (!knownSlugs.has(slug)) return
    let feature = found.get(slug)
    if (!feature) {
      feature = { slug, lines: [], count: 0 }
      found.set(slug, feature)
    }
    feature.count++
    const line = lineOf(at)
    if (feature.lines.length < LINES_KEPT && feature.lines.at(-1) !== line) feature.lines.push(line)
  }

  const css = (text: string, offset: number, inStyleAttribute: boolean) => {
    // Pieces between ; { and }: a piece before `{` is a selector or an at-rule, the others are declarations.
    let start = 0
    for (let i = 0; i <= text.length; i++) {
      const c = i < text.length ? text[i] : ';'
      if (c !== ';' && c !== '{' && c !== '}') continue
      const piece = text.slice(start, i)
      // Where the piece's text starts (past the line break that usually ends the previous rule).
      const at = offset + start + (piece.length - piece.trimStart().length)
      start = i + 1
      const trimmed = piece.trim().toLowerCase()
      if (trimmed === '') continue
      if (c === '{' && !inStyleAttribute) {
        if (trimmed.startsWith('@')) {
          const rule = AT_RULES.find((name) => trimmed.startsWith(`@${name}`))
          if (rule) add(`css-at-${rule}`, at)
          if (rule === 'media')
            for (const feature of MEDIA_FEATURES) if (trimmed.includes(feature)) add(`css-at-media-${feature}`, at)
        } else {
          for (let colon = trimmed.indexOf(':'); colon !== -1; colon = trimmed.indexOf(':', colon + 1)) {
            const element = trimmed[colon + 1] === ':'
            const nameFrom = colon + (element ? 2 : 1)
            let nameEnd = nameFrom
            while (nameEnd < trimmed.length && /[a-z-]/.test(trimmed[nameEnd]!)) nameEnd++
            const name = trimmed.slice(nameFrom, nameEnd)
            if (name) add(`css-pseudo-${element ? 'element' : 'class'}-${name}`, at)
            if (element) colon++
          }
        }
        continue
      }
      const colon = trimmed.indexOf(':')
      if (colon <= 0) continue
      const property = trimmed.slice(0, colon).trim()
      const value = trimmed.slice(colon + 1)
      if (!/^-?[a-z][a-z-]*$/.test(property)) continue
      if (property.startsWith('--')) add('css-variables', at)
      add(`css-${property}`, at)
      if (property === 'display') {
        const shown = value.replace('!important', '').trim()
        if (shown === 'flex' || shown === 'inline-flex') add('css-display-flex', at)
        else if (shown === 'grid' || shown === 'inline-grid') add('css-display-grid', at)
        else if (shown === 'none') add('css-display-none', at)
      }
      if (value.includes('!important')) add('css-important', at)
      for (const [call, slug] of FUNCTIONS) if (value.includes(call)) add(slug, at)
    }
  }

  let i = lower.indexOf('<')
  while (i !== -1 && i < lower.length) {
    if (lower.startsWith('<!--', i)) {
      add('html-comments', i)
      const end = lower.indexOf('-->', i + 4)
      if (end === -1) break
      i = lower.indexOf('<', end + 3)
      continue
    }
    if (lower.startsWith('<!doctype', i)) add('html-doctype', i)
    const close = lower.indexOf('>', i + 1)
    if (close === -1) break
    const tag = lower.slice(i + 1, close)
    let nameEnd = 0
    while (nameEnd < tag.length && /[a-z0-9-]/.test(tag[nameEnd]!)) nameEnd++
    const name = tag.slice(0, nameEnd)
    if (name) {
      const element = ELEMENTS[name]
      if (element) add(element, i)
      const attributes = tag.slice(nameEnd)
      for (const attribute of Object.keys(ATTRIBUTES))
        if (hasAttribute(attributes, attribute)) add(ATTRIBUTES[attribute]!, i)
      if (hasAttribute(attributes, 'width')) add('html-width', i)
      if (hasAttribute(attributes, 'height')) add('html-height', i)
      const type = attributeValue(attributes, 'type')
      if (name === 'input' && type && INPUT_TYPES.has(type)) add(`html-input-${type}`, i)
      if (name === 'button' && (type === 'submit' || type === 'reset')) add(`html-button-${type}`, i)
      const href = attributeValue(attributes, 'href')
      if (name === 'a' && href?.startsWith('#')) add('html-anchor-links', i)
      if (name === 'a' && href?.startsWith('mailto:')) add('html-mailto-links', i)
      if (name === 'meta' && attributeValue(attributes, 'name') === 'color-scheme') add('html-meta-color-scheme', i)
      const style = attributeValue(attributes, 'style')
      if (style) css(style, i, true)
      if (name === 'style') {
        const end = lower.indexOf('</style', close + 1)
        const stop = end === -1 ? lower.length : end
        css(html.slice(close + 1, stop), close + 1, false)
        if (end === -1) break
        i = lower.indexOf('<', end + 1)
        continue
      }
    }
    i = lower.indexOf('<', close + 1)
  }
  return [...found.values()]
}

/** Whether a tag's attribute text names an attribute (as a whole word). */
function hasAttribute(attributes: string, name: string): boolean {
  for (let at = attributes.indexOf(name); at !== -1; at = attributes.indexOf(name, at + 1)) {
    const before = attributes[at - 1]
    const after = attributes[at + name.length]
    if ((before === undefined || /[\s"'/]/.test(before)) && (after === undefined || /[\s=/>]/.test(after))) return true
  }
  return false
}

/** A quoted or bare attribute value, lower-cased (the tag text is), or undefined. */
function attributeValue(attributes: string, name: string): string | undefined {
  for (let at = attributes.indexOf(name); at !== -1; at = attributes.indexOf(name, at + 1)) {
    const before = attributes[at - 1]
    if (before !== undefined && !/[\s"'/]/.test(before)) continue
    let i = at + name.length
    while (attributes[i] === ' ') i++
    if (attributes[i] !== '=') continue
    i++
    while (attributes[i] === ' ') i++
    const quote = attributes[i]
    if (quote === '"' || quote === "'") {
      const end = attributes.indexOf(quote, i + 1)
      return attributes.slice(i + 1, end === -1 ? attributes.length : end)
    }
    let end = i
    while (end < attributes.length && !/[\s>]/.test(attributes[end]!)) end++
    return attributes.slice(i, end)
  }
  return undefined
}
