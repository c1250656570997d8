/**
 * UTF-7 (RFC 2152), still sent by old Outlook versions. No runtime TextDecoder knows it, and
 * postal-mime falls back to windows-1252 for labels it does not know, which leaves UTF-7's
 * ASCII untouched: decoding that text again here gives the characters the sender meant.
 */

const BASE64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/'
const SEXTET = new Map([...BASE64].map((char, value) => [char, value]))

/** Labels seen for UTF-7: utf-7, x-utf-7, unicode-1-1-utf-7, csUnicode11UTF7, ... */
export function isUtf7Charset(label: string | undefined): boolean {
  if (!label) return false
  return /^(?:x|cs)?(?:unicode\d*)?utf7$/.test(label.toLowerCase().replace(/[^a-z0-9]/g, ''))
}

/** One shifted run: modified base64 of UTF-16 code units; leftover bits under 16 are padding. */
function decodeRun(run: string): string {
  let out = ''
  let buffer = 0
  let bits = 0
  for (const char of run) {
    buffer = ((buffer << 6) | SEXTET.get(char)!) & 0x3fffff
    bits += 6
    if (bits >= 16) {
      bits -= 16
      out += String.fromCharCode((buffer >> bits) & 0xffff)
    }
  }
  return out
}

/**
 * A `+` starts a run that ends at the first character outside base64; a `-` right after the
 * run is absorbed, and `+-` is a literal plus. Unpaired surrogates become U+FFFD.
 */
export function decodeUtf7(text: string): string {
  if (!text.includes('+')) return text
  return text
    .replace(/\+([A-Za-z0-9+/]*)-?/g, (_match, run: string) => (run === '' ? '+' : decodeRun(run)))
    .toWellFormed()
}
