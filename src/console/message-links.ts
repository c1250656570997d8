/**
 * Links in a test mail are why it is opened (the confirm or reset link), but the frame
 * that shows its HTML may not navigate anywhere (`frame-src 'self'`) and runs no script.
 * So every link is made to open in a new top-level tab: the frame's sandbox adds only
 * `allow-popups allow-popups-to-escape-sandbox`, and each `<a>`/`<area>` gets
 * `target="_blank"` and `rel="noopener noreferrer"` (the new tab cannot reach the frame,
 * and learns nothing of the console's URL). Only absolute http(s) and mailto links are
 * kept: a `javascript:` or `data:` URL, or a relative one (which would resolve against
 * the console's own origin), loses its href and stays plain text.
 *
 * The URLs in a text part are turned into the same kind of links by `splitLinks`, which
 * the message page renders as escaped text and `<a>` elements.
 */

/**
 * The frame's sandbox tokens (attribute and CSP alike): popups, so a link opens in a new,
 * ordinary tab, and scripts for the one measuring script the frame's CSP allows by its hash
 * (frame-height.ts; the email's own scripts stay refused). No form, no same-origin access.
 */
export const MESSAGE_HTML_SANDBOX = 'allow-scripts allow-popups allow-popups-to-escape-sandbox'

/** The schemes a link in a message may keep, tested on the raw attribute (entities cannot start a scheme). */
const FOLLOWABLE = /^\s*(https?:\/\/|mailto:)/i

/** Rewrites every link of message HTML to open in a new tab, safely; everything else is left as it was. */
export function linksOpenInNewTab(html: string): string {
  if (html === '') return html
  const link = {
    element(element: HTMLRewriterTypes.Element) {
      const href = element.getAttribute('href') ?? ''
      if (!FOLLOWABLE.test(href)) {
        element.removeAttribute('href')
        element.removeAttribute('target')
        return
      }
      element.setAttribute('target', '_blank')
      element.setAttribute('rel', 'noopener noreferrer')
      element.removeAttribute('ping')
    },
  }
  // A <base target> of the message's own would not matter (each link
  // sets its target), and its href is refused by `base-uri 'none'`.
  return new HTMLRewriter().on('a[href]', link).on('area[href]', link).transform(html)
}

/** A run of a text part: plain text, or a URL to show as a link. */
export type TextRun = { text: string; href?: string }

/** http(s) URLs in running text; trailing punctuation that usually closes a sentence is left out. */
const URL_IN_TEXT = /\bhttps?:\/\/[^\s<>"'`]+/gi
const TRAILING = /[.,;:!?)\]}'"»]+$/

/** Splits a text part into text and links (at most `max` links; the rest stays text). */
export function splitLinks(text: string, max = 500): TextRun[] {
  const runs: TextRun[] = []
  let last = 0
  let found = 0
  for (const match of text.matchAll(URL_IN_TEXT)) {
    if (found >= max) break
    let url = match[0]
    // Keep a closing parenthesis that belongs to the URL, as in a Wikipedia link.
    const trailing = TRAILING.exec(url)?.[0] ?? ''
    let cut = trailing.length
    if (cut > 0 && trailing.startsWith(')') && url.slice(0, -cut).includes('(')) cut -= 1
    url = url.slice(0, url.length - cut)
    if (!/^https?:\/\/[^/?#\s]+/i.test(url)) continue
    const start = match.index!
    if (start > last) runs.push({ text: text.slice(last, start) })
    runs.push({ text: url, href: url })
    last = start + url.length
    found++
  }
  if (last < text.length) runs.push({ text: text.slice(last) })
  return runs
}

/** A link found in a message: where it goes, and the text it was shown as. */
export interface FoundLink {
  url: string
  text: string
}

/** At most this many links are listed under a message (a newsletter can carry hundreds). */
const MAX_LISTED_LINKS = 100

const ENTITY: Record<string, string> = { amp: '&', quot: '"', apos: "'", lt: '<', gt: '>' }
const decodeEntities = (raw: string) =>
  raw.replace(/&(#x[0-9a-f]+|#\d+|[a-z]+);/gi, (whole, name: string) => {
    if (name[0] === '#') {
      const code = name[1] === 'x' || name[1] === 'X' ? Number.parseInt(name.slice(2), 16) : Number(name.slice(1))
      return code > 0 && code <= 0x10ffff ? String.fromCodePoint(code) : whole
    }
    return ENTITY[name.toLowerCase()] ?? whole
  })

/**
 * The followable links of a message, as a test would extract them: every http(s) link of
 * the HTML part (with its text), then the URLs of the text part, each URL once, in order.
 */
export function findLinks(html: string | null, text: string | null): FoundLink[] {
  const found = new Map<string, FoundLink>()
  const add = (url: string, shown: string) => {
    if (found.size >= MAX_LISTED_LINKS || !/^https?:\/\/[^/?#\s]+/i.test(url)) return
    const existing = found.get(url)
    if (!existing) found.set(url, { url, text: shown })
    else if (!existing.text && shown) existing.text = shown
  }
  if (html) {
    let current: FoundLink | null = null
    new HTMLRewriter()
      .on('a[href]', {
        element(element) {
          const url = decodeEntities(element.getAttribute('href') ?? '').trim()
          current = { url, text: '' }
          element.onEndTag(() => {
            if (current) add(current.url, current.text.replace(/\s+/g, ' ').trim().slice(0, 200))
            current = null
          })
        },
        text(chunk) {
          if (current) current.text += decodeEntities(chunk.text)
        },
      })
      .transform(html)
  }
  if (text) for (const run of splitLinks(text)) if (run.href) add(run.href, '')
  return [...found.values()]
}

/** A one-time code found in a message, with the words around it. */
export interface FoundCode {
  code: string
  context: string
}

/**
 * Words that announce a code, then (within a short stretch) the code:
 * 4 to 10 letters and digits with at least one digit, or 123-456.
 */
const ANNOUNCED_CODE = new RegExp(
  String.raw`\b(?:code|otp|pin|passcode|password|verification|verify|token|one[- ]time)\b[^\n]{0,40}?` +
    String.raw`\b((?=[A-Z0-9-]*\d)[A-Z0-9]{4,10}|\d{3}[- ]\d{3})\b`,
  'gi',
)
/** A number of six digits on its own (the commonest OTP form). */
const SIX_DIGITS = /(?<![\d.,:/-])\b\d{6}\b(?![\d.,:/-]\d)/g

/**
 * The one-time codes a test would extract from a message (subject and text, else the
 * HTML's text): codes announced by "code", "OTP", "PIN", "verification"... and six-digit
 * numbers standing alone. At most 10, each once, with 40 characters of context.
 */
export function findCodes(subject: string | null, text: string | null, html: string | null): FoundCode[] {
  const body =
    text ?? (html ? decodeEntities(html.replace(/<(style|script)[\s\S]*?<\/\1>/gi, ' ').replace(/<[^>]*>/g, ' ')) : '')
  const haystack = `${subject ?? ''}\n${body}`.slice(0, 200_000)
  const found = new Map<string, FoundCode>()
  const add = (code: string, at: number) => {
    if (found.size >= 10 || found.has(code)) return
    const context = haystack
      .slice(Math.max(0, at - 40), at + code.length + 40)
      .replace(/\s+/g, ' ')
      .trim()
    found.set(code, { code, context })
  }
  for (const match of haystack.matchAll(ANNOUNCED_CODE))
    add(match[1]!, match.index! + match[0].length - match[1]!.length)
  for (const match of haystack.matchAll(SIX_DIGITS)) add(match[0], match.index!)
  return [...found.values()]
}
