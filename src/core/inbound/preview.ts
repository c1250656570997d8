/**
 * The `preview` field: a short, single-line plain-text excerpt of the body.
 *
 * Message bodies are untrusted and up to LIMIT_BODY_BYTES long, so everything here is one
 * left-to-right pass. Each search for a closing construct (`>`, `-->`, `</script>`) is
 * remembered, so a body of unclosed `<`, `<!--` or `<script` never rescans its tail: lazy
 * regexes did, once per opening, which is quadratic (figure in bench/README.md).
 */
const PREVIEW_CHARACTERS = 200

const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: ' ' }

/** Elements whose content is not text: dropped up to their closing tag. */
const HIDDEN = new Set(['script', 'style', 'head', 'title'])
/** The same, when never closed: a browser shows nothing after them (`<head>` may end implicitly). */
const HIDDEN_TO_END = new Set(['script', 'style', 'title'])
/** Tags that end a line of text, so the words on either side stay apart. */
const BREAKING = new Set(['br', '/p', '/div', '/li', '/tr', '/h1', '/h2', '/h3', '/h4', '/h5', '/h6'])

const isWordCode = (c: number) => (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === 95
const isDigit = (c: number) => c >= 48 && c <= 57
const isHexDigit = (c: number) => isDigit(c) || ((c | 0x20) >= 97 && (c | 0x20) <= 102)
const isLetter = (c: number) => (c | 0x20) >= 97 && (c | 0x20) <= 122

/** End (exclusive) of the run of characters from `from` that satisfy `accepts`. */
function runEnd(s: string, from: number, accepts: (c: number) => boolean): number {
  let i = from
  while (i < s.length && accepts(s.charCodeAt(i))) i++
  return i
}

/**
 * Decodes `&name;`, `&#nn;` and `&#xhh;`; unknown names stay as written. Linear: each character is read at most twice.
 */
export function decodeEntities(text: string): string {
  let at = text.indexOf('&')
  if (at === -1) return text
  let out = ''
  let copied = 0
  while (at !== -1) {
    let end = -1
    let value: string | undefined
    if (text.charCodeAt(at + 1) === 35 /* # */) {
      const hex = (text.charCodeAt(at + 2) | 0x20) === 120 /* x */
      const digitsFrom = at + (hex ? 3 : 2)
      const digitsEnd = runEnd(text, digitsFrom, hex ? isHexDigit : isDigit)
      if (digitsEnd > digitsFrom && text.charCodeAt(digitsEnd) === 59 /* ; */) {
        end = digitsEnd + 1
        const code = parseInt(text.slice(digitsFrom, digitsEnd), hex ? 16 : 10)
        // As HTML does: NUL, a surrogate half or past Unicode's end is U+FFFD, never a lone surrogate.
        value =
          Number.isFinite(code) && code > 0 && code <= 0x10ffff && !(code >= 0xd800 && code <= 0xdfff)
            ? String.fromCodePoint(code)
            : '\ufffd'
      }
    } else {
      const nameEnd = runEnd(text, at + 1, isLetter)
      if (nameEnd > at + 1 && text.charCodeAt(nameEnd) === 59) {
        end = nameEnd + 1
        value = ENTITIES[text.slice(at + 1, nameEnd).toLowerCase()]
      }
    }
    if (end !== -1 && value !== undefined) {
      out += text.slice(copied, at) + value
      copied = end
    }
    at = text.indexOf('&', end !== -1 ? end : at + 1)
  }
  return out + text.slice(copied)
}

/** Remembers the next match of a search at or after a position, so a failed search is never repeated. */
function forwardSearch(find: (from: number) => number): (from: number) => number {
  let known = -2 // position of the last answer; -1 means "none after `searchedFrom`"
  let searchedFrom = Infinity
  return (from) => {
    if (!(known === -1 ? from >= searchedFrom : known >= from && from >= searchedFrom)) {
      searchedFrom = from
      known = find(from)
    }
    return known
  }
}

const TEXT_SLICE = 16 * 1024
const UNCLOSED_VALUE = -2

// C0 and C1 controls (other than whitespace) and the bidi controls: invisible, or able to
// reorder the text around the preview wherever it is shown on one line.
// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is this pattern's purpose
const UNSHOWN = /[\u0000-\u0008\u000e-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g

const collapse = (text: string) => text.replace(UNSHOWN, '').replace(/\s+/g, ' ').trim()

/**
 * Good enough for a preview: drops scripts, styles, comments and tags; decodes common
 * entities. With `enough`, stops once the collapsed text is longer than that many UTF-16
 * units (checked at doubling lengths, so the checks add up to linear work). `lineBreak` is
 * what a line-ending tag becomes: a space for one-line uses, a newline for a readable text.
 */
export function htmlToText(html: string, enough = Infinity, lineBreak = ' '): string {
  const nextGt = forwardSearch((from) => html.indexOf('>', from))
  const quotedValue = /=[\t\n\f\r ]*["']/g
  const nextQuotedValue = forwardSearch((from) => {
    quotedValue.lastIndex = from
    return quotedValue.exec(html) ? quotedValue.lastIndex - 1 : -1
  })
  const nextQuote = {
    '"': forwardSearch((from) => html.indexOf('"', from)),
    "'": forwardSearch((from) => html.indexOf("'", from)),
  }
  /** The `>` that ends the tag opened before `from`, past any `>` inside a quoted attribute value. */
  const tagEnd = (from: number): number => {
    for (;;) {
      const gt = nextGt(from)
      const quote = nextQuotedValue(from)
      if (gt === -1 || quote === -1 || quote > gt) return gt
      const close = nextQuote[html[quote] as '"' | "'"](quote + 1)
      if (close === -1) return UNCLOSED_VALUE
      from = close + 1
    }
  }
  const nextCommentEnd = forwardSearch((from) => html.indexOf('-->', from))
  const closers = new Map<string, (from: number) => number>()
  const closerOf = (name: string) => {
    let search = closers.get(name)
    if (!search) {
      const pattern = new RegExp(`</${name}\\s*>`, 'gi')
      search = forwardSearch((from) => {
        pattern.lastIndex = from
        return pattern.exec(html) ? pattern.lastIndex : -1
      })
      closers.set(name, search)
    }
    return search
  }

  const pieces: string[] = []
  let produced = 0
  let checkAt = 1024
  let i = 0
  while (i < html.length) {
    if (produced >= checkAt) {
      if (collapse(pieces.join('')).length > enough) break
      checkAt = 2 * produced
    }
    const lt = html.indexOf('<', i)
    const textEnd = lt === -1 ? html.length : lt
    if (textEnd > i) {
      // With a bound, long text is taken in slices so `enough` is checked between them
      // (a slice never ends inside a short entity).
      let end = textEnd
      if (enough !== Infinity && end - i > TEXT_SLICE) {
        end = i + TEXT_SLICE
        const amp = html.lastIndexOf('&', end)
        if (amp > end - 32) end = amp
      }
      const text = decodeEntities(html.slice(i, end))
      pieces.push(text)
      produced += text.length
      if (end < textEnd) {
        i = end
        continue
      }
    }
    if (lt === -1) break
    if (html.startsWith('<!--', lt)) {
      const end = nextCommentEnd(lt + 4)
      pieces.push(' ')
      if (end === -1) break // an unclosed comment hides the rest
      i = end + 3
      continue
    }
    const nameFrom = html.charCodeAt(lt + 1) === 47 /* / */ ? lt + 2 : lt + 1
    const name = html.slice(lt + 1, runEnd(html, nameFrom, isWordCode)).toLowerCase()
    if (HIDDEN.has(name)) {
      const end = closerOf(name)(lt + 1 + name.length)
      if (end !== -1 || HIDDEN_TO_END.has(name)) {
        pieces.push(' ')
        if (end === -1) break
        i = end
        continue
      }
    }
    const gt = tagEnd(lt + 1)
    if (gt === UNCLOSED_VALUE) {
      pieces.push(' ') // the tag never ends: a browser shows nothing after it
      break
    }
    if (gt === -1) {
      // No tag can close any more: the rest is text, '<' included.
      pieces.push(decodeEntities(html.slice(lt)))
      break
    }
    if (BREAKING.has(name)) pieces.push(lineBreak)
    i = gt + 1
  }
  return pieces.join('')
}

/**
 * The words of `source` without UNSHOWN characters, joined by single spaces, but only until
 * the result is longer than `max`: the preview needs a head, and collapsing a whole large
 * body held the event loop on the way to the 250 (bench/README.md). The result is always a
 * prefix of the fully collapsed text, and is all of it when not longer than `max`.
 */
function collapsedHead(source: string, max: number): string {
  const words = /\S+/g
  let head = ''
  for (let match = words.exec(source); match && head.length <= max; match = words.exec(source)) {
    const word = match[0].replace(UNSHOWN, '')
    if (word !== '') head += head === '' ? word : ` ${word}`
  }
  return head
}

export function makePreview(text: string | null, html: string | null): string {
  const source = text && text.trim() !== '' ? text : html ? htmlToText(html, 2 * PREVIEW_CHARACTERS) : ''
  // A text body may hold a lone surrogate (from a UTF-16 or UTF-7 part): U+FFFD instead.
  const collapsed = collapsedHead(source, 2 * PREVIEW_CHARACTERS + 2).toWellFormed()
  // By code point, so no surrogate pair is cut in half. A code point is at most two UTF-16
  // units, so the first 2N units hold the first N code points: splitting only that head
  // keeps a long body from becoming an array of every character.
  const longer = collapsed.length > 2 * PREVIEW_CHARACTERS
  const characters = Array.from(longer ? collapsed.slice(0, 2 * PREVIEW_CHARACTERS + 2) : collapsed)
  return !longer && characters.length <= PREVIEW_CHARACTERS
    ? collapsed
    : characters
        .slice(0, PREVIEW_CHARACTERS - 1)
        .join('')
        .trimEnd() + '…'
}
