/**
 * RFC 2047 encoded words, decoded by postal-mime's own decodeWords, plus the one charset it
 * cannot decode: a UTF-7 word is first rewritten as the equivalent UTF-8 word, so joining of
 * adjacent words and whitespace between them follow postal-mime's rules unchanged.
 */
import { decodeWords } from 'postal-mime'
import { decodeUtf7, isUtf7Charset } from './utf7.ts'

const ENCODED_WORD = /=\?([^?\s*]+)(\*[^?\s]*)?\?([QqBb])\?([^?]*)\?=/g

function wordBytes(encoding: string, text: string): Buffer {
  if (encoding.toUpperCase() === 'B') return Buffer.from(text, 'base64')
  return Buffer.from(
    text.replace(/_/g, ' ').replace(/=([0-9A-Fa-f]{2})/g, (_hex, code: string) => String.fromCharCode(parseInt(code, 16))),
    'latin1',
  )
}

export function decodeHeaderText(value: string): string {
  const rewritten = value.replace(ENCODED_WORD, (word, charset: string, _language, encoding: string, text: string) => {
    if (!isUtf7Charset(charset)) return word
    const decoded = decodeUtf7(wordBytes(encoding, text).toString('latin1'))
    return `=?utf-8?B?${Buffer.from(decoded, 'utf8').toString('base64')}?=`
  })
  return decodeWords(rewritten)
}
