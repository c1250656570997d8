/**
 * The first mailbox of an address header (RFC 5322 §3.4), read as its grammar says:
 * comments and folding whitespace are not part of an address (`pete(his account)@silly.test`
 * is pete@silly.test, `jdoe@machine(comment).  example` is jdoe@machine.example), an
 * obsolete source route is dropped, and a group yields its first member.
 */

type Token =
  | { kind: 'atom' | 'quoted' | 'literal' | 'comment'; text: string }
  | { kind: 'special'; text: string }
  | { kind: 'space'; text: ' ' }

const SPECIALS = '<>@,;:.'
const ATOM_END = /[\s()"<>@,;:.[\]\\]/

/** Reads a delimited run (quoted string, comment, domain literal) with backslash escapes; nests for comments. */
function readDelimited(value: string, start: number, open: string, close: string): { text: string; end: number } {
  let text = ''
  let depth = 1
  let at = start + 1
  for (; at < value.length; at++) {
    const char = value[at]!
    if (char === '\\' && at + 1 < value.length) {
      text += value[++at]
      continue
    }
    if (open === '(' && char === '(') depth++
    else if (char === close && --depth === 0) return { text, end: at + 1 }
    text += char
  }
  return { text, end: at }
}

function tokenize(value: string): Token[] {
  const tokens: Token[] = []
  for (let at = 0; at < value.length; ) {
    const char = value[at]!
    if (/\s/.test(char)) {
      if (tokens.at(-1)?.kind !== 'space') tokens.push({ kind: 'space', text: ' ' })
      at++
    } else if (char === '(' || char === '"' || char === '[') {
      const close = char === '(' ? ')' : char === '"' ? '"' : ']'
      const { text, end } = readDelimited(value, at, char, close)
      tokens.push({ kind: char === '(' ? 'comment' : char === '"' ? 'quoted' : 'literal', text })
      at = end
    } else if (SPECIALS.includes(char)) {
      tokens.push({ kind: 'special', text: char })
      at++
    } else {
      let end = at + 1
      while (end < value.length && !ATOM_END.test(value[end]!)) end++
      tokens.push({ kind: 'atom', text: value.slice(at, end) })
      at = end
    }
  }
  return tokens
}

const isSpecial = (token: Token | undefined, text: string): boolean => token?.kind === 'special' && token.text === text

/** The tokens of the first non-empty list element, entering a group if the header starts with one. */
function firstElement(tokens: Token[]): Token[] {
  const firstColon = tokens.findIndex((token) => isSpecial(token, ':'))
  const before = firstColon < 0 ? [] : tokens.slice(0, firstColon)
  const isGroup = firstColon >= 0 && !before.some((token) => isSpecial(token, '<') || isSpecial(token, '@'))
  const list = isGroup ? tokens.slice(firstColon + 1) : tokens
  let element: Token[] = []
  let inAngle = false
  for (const token of list) {
    if (isSpecial(token, '<')) inAngle = true
    if (isSpecial(token, '>')) inAngle = false
    if (!inAngle && (isSpecial(token, ',') || isSpecial(token, ';'))) {
      if (element.some((t) => t.kind !== 'space' && t.kind !== 'comment')) return element
      element = []
      continue
    }
    element.push(token)
  }
  return element
}

const DOT_ATOM = /^[A-Za-z0-9!#$%&'*+/=?^_`{|}~\u0080-\uffff-]+(?:\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~\u0080-\uffff-]+)*$/

function addressOf(tokens: Token[]): string {
  const lastColon = tokens.findLastIndex((token) => isSpecial(token, ':'))
  return tokens
    .slice(lastColon + 1)
    .filter((token) => token.kind !== 'space' && token.kind !== 'comment' && !isSpecial(token, '>'))
    .map((token) => {
      if (token.kind === 'literal') return `[${token.text.replace(/\s+/g, '')}]`
      if (token.kind === 'quoted')
        return DOT_ATOM.test(token.text) ? token.text : `"${token.text.replace(/(["\\])/g, '\\$1')}"`
      return token.text
    })
    .join('')
}

/** Display-name words joined by single spaces; comments count as space. */
function phraseOf(tokens: Token[]): string {
  return tokens
    .map((token) => (token.kind === 'comment' || token.kind === 'space' ? ' ' : token.text))
    .join('')
    .replace(/\s+/g, ' ')
    .trim()
}

const isGap = (token: Token): boolean => token.kind === 'space' || token.kind === 'comment'
const isWord = (token: Token): boolean => token.kind === 'atom' || token.kind === 'quoted'
/** What a display name may hold: words, obsolete dots (`Joe Q. Public`), comments, space. */
const isPhrase = (tokens: Token[]): boolean =>
  tokens.every((token) => isWord(token) || isGap(token) || isSpecial(token, '.'))

/**
 * From `at` (an `@`) outwards, the tokens of one side of an addr-spec: words joined by dots,
 * with the obsolete syntax's whitespace and comments around the dots (RFC 5322 §4.4). A word
 * that follows the last word across whitespace alone, with no dot between, is not part of
 * it. `step` -1 reads the local part (words are atoms or quoted strings), +1 the domain
 * (atoms or a domain literal). Returns the index of the outermost token taken.
 */
function addrSpecSide(tokens: Token[], at: number, step: -1 | 1): number {
  let edge = at
  let needWord = true
  let gap = false
  for (let i = at + step; i >= 0 && i < tokens.length; i += step) {
    const token = tokens[i]!
    if (isGap(token)) gap = true
    else if (isSpecial(token, '.')) {
      edge = i
      needWord = true
      gap = false
    } else if (token.kind === 'atom' || (step === -1 ? token.kind === 'quoted' : token.kind === 'literal')) {
      if (!needWord && gap) break
      edge = i
      needWord = false
      gap = false
    } else break
  }
  return edge
}

// RFC 2047 encoded words at the start of a local part, glued to it: `=?ks_c_5601-1987?B?...?=ss.lee@`.
const LEADING_ENCODED_WORDS = /^((?:=\?[^?\s]+\?[QqBb]\?[^?\s]*\?=)+)(?=[^@])/

/**
 * A mailbox without angle brackets whose addr-spec has words before or after it:
 * `Big Bug bb@bug.com`, `=?ks_c_5601-1987?B?...?= ss.lee@example.com`. No form of RFC 5322
 * puts words beside a bare addr-spec, and joining them all invented `BigBugbb@bug.com`, an
 * address that appears nowhere. So the address is the addr-spec that is spelled, and the
 * words before it are the name (those after it when there are none before, unless a comment
 * gives the name). Undefined when the element is not of that shape: then nothing is split.
 */
function wordsBesideAddress(element: Token[]): { name: string; address: string } | undefined {
  const ats = element.flatMap((token, index) => (isSpecial(token, '@') ? [index] : []))
  if (ats.length !== 1) return undefined
  const at = ats[0]!
  const start = addrSpecSide(element, at, -1)
  const end = addrSpecSide(element, at, 1) + 1
  const before = element.slice(0, start)
  const after = element.slice(end)
  if (!isPhrase(before) || !isPhrase(after)) return undefined
  let address = addressOf(element.slice(start, end))
  let name = phraseOf(before)
  const glued = LEADING_ENCODED_WORDS.exec(address)
  if (glued) {
    name = `${name} ${glued[1]}`.trim()
    address = address.slice(glued[1]!.length)
  }
  if (!before.some(isWord) && !glued) {
    if (!after.some(isWord)) return undefined
    const comment = after.findLast((token) => token.kind === 'comment')
    name = comment ? comment.text.replace(/\s+/g, ' ').trim() : phraseOf(after)
  }
  return { name, address }
}

/** name is still RFC 2047-encoded here; address may be anything the sender wrote (see isAddress). */
export function firstMailbox(value: string): { name: string; address: string } {
  const element = firstElement(tokenize(value))
  const open = element.findIndex((token) => isSpecial(token, '<'))
  if (open >= 0) return { name: phraseOf(element.slice(0, open)), address: addressOf(element.slice(open + 1)) }
  // A stray `>` is noise here, as addressOf treats it.
  const split = wordsBesideAddress(element.filter((token) => !isSpecial(token, '>')))
  if (split) return split
  // A bare addr-spec; by old convention a trailing comment carries the name: `jane@x.test (Jane)`.
  const comment = element.findLast((token) => token.kind === 'comment')
  return { name: comment ? comment.text.replace(/\s+/g, ' ').trim() : '', address: addressOf(element) }
}

/** RFC 5322 addr-spec with RFC 6532 UTF-8: a local part and a domain, nothing else. */
export function isAddress(address: string): boolean {
  const at = address.lastIndexOf('@')
  if (at <= 0) return false
  const local = address.slice(0, at)
  const domain = address.slice(at + 1)
  const localOk = DOT_ATOM.test(local) || /^"(?:[^"\\\r\n]|\\.)*"$/.test(local)
  const domainOk = DOT_ATOM.test(domain) || /^\[[^[\]\\\s]*\]$/.test(domain)
  return localOk && domainOk && address.length <= 998
}
