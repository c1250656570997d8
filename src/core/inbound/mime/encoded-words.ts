/**
 * RFC 2047 encoded words in subject, display names and attachment file names.
 *
 * Senders split a multi-byte character across two words (RFC 2047 section 5 forbids it, yet
 * SpamAssassin's corpus and Exchange bounces do it), so adjacent words of one charset are
 * decoded as one run of bytes, as Python's email package does: whatever their encodings (B
 * beside Q), however the first one ends (base64 `=` padding), and whatever the case of the
 * charset label (`utf-8` and `UTF-8` are one charset). postal-mime joins the base64 text of
 * the words instead, which cannot join a padded word and compares labels by case.
 *
 * So the words are read here, and each run's bytes go to postal-mime's decodeWords as one base64
 * word: its charset table (aliases, code pages) stays the one definition. A UTF-7 run, which no
 * TextDecoder knows, is decoded here.
 */
import { decodeWords } from 'postal-mime'
import { decodeUtf7, isUtf7Charset } from './utf7.ts'

// postal-mime's grammar for a word (a label runs to the next '?', no whitespace), plus the
// RFC 2231 language tag (`utf-8*en`), which does not change the charset.
const ENCODED_WORD = /=\?([^?\s*]+)(\*[^?\s]*)?\?([QqBb])\?([^?]*)\?=/g
// Only linear whitespace separates words of one run; any other text ends the run.
const BETWEEN_WORDS = /^[ \t\r\n]*$/

interface Run {
  charset: string
  bytes: Buffer[]
}

/** A word's bytes as postal-mime reads them (lenient: stray characters, missing padding). */
function wordBytes(encoding: string, text: string): Buffer {
  if (encoding.toUpperCase() === 'B') return Buffer.from(text.replace(/[^A-Za-z0-9+/]/g, ''), 'base64')
  const bytes: number[] = []
  // A line break inside `=XX` (a folded word) and `_` or whitespace as a space, as postal-mime does.
  const unfolded = Buffer.from(text.replace(/=\s+([0-9A-Fa-f])/g, '=$1').replace(/[_\s]/g, ' '), 'utf8')
  for (let i = 0; i < unfolded.length; i++) {
    const hex = unfolded[i] === 0x3d ? unfolded.subarray(i + 1, i + 3).toString('latin1') : ''
    if (/^[0-9A-Fa-f]{2}$/.test(hex)) {
      bytes.push(parseInt(hex, 16))
      i += 2
    } else bytes.push(unfolded[i]!)
  }
  return Buffer.from(bytes)
}

/** One charset's bytes as text, by postal-mime's charset table (a UTF-7 one decoded here). */
function decodeBytes(charset: string, bytes: Buffer): string {
  if (isUtf7Charset(charset)) return decodeUtf7(bytes.toString('latin1'))
  return decodeWords(`=?${charset}?B?${bytes.toString('base64')}?=`)
}

const replacements = (text: string): number => text.split('\ufffd').length - 1

/**
 * A run's bytes decoded together, unless that gives more replacement characters than its
 * words decoded apart: each ISO-2022-JP word ends with its own escape back to ASCII, and the
 * WHATWG decoder refuses one escape right after another, as Python's decodes each word alone.
 */
function decodeRun(run: Run): string {
  const joined = decodeBytes(run.charset, Buffer.concat(run.bytes))
  if (run.bytes.length === 1 || !joined.includes('\ufffd')) return joined
  const apart = run.bytes.map((bytes) => decodeBytes(run.charset, bytes)).join('')
  return replacements(apart) < replacements(joined) ? apart : joined
}

export function decodeHeaderText(value: string): string {
  if (!value.includes('=?')) return value
  let out = ''
  let at = 0
  let run: Run | undefined
  for (const match of value.matchAll(ENCODED_WORD)) {
    const [word, charset, , encoding, text] = match as unknown as [string, string, string | undefined, string, string]
    const before = value.slice(at, match.index)
    at = match.index + word.length
    const bytes = wordBytes(encoding, text)
    const adjacent = run !== undefined && BETWEEN_WORDS.test(before)
    if (run && adjacent && run.charset.toLowerCase() === charset.toLowerCase()) {
      run.bytes.push(bytes)
      continue
    }
    if (run) out += decodeRun(run)
    // Whitespace between two encoded words is dropped (RFC 2047 section 6.2), other text kept.
    if (!adjacent) out += before
    run = { charset, bytes: [bytes] }
  }
  if (run) out += decodeRun(run)
  return out + value.slice(at)
}
