/**
 * The MIME corpus (test/fixtures/corpus, sources in SOURCES.md) plus two generated edge
 * cases, as an MTA hands them on: CRLF line ends, the last line ended too. The stored raw
 * message is exactly these bytes.
 */
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { largestLegalMessage, thousandAttachments } from './generated-messages.ts'

export const CORPUS_DIR = join(import.meta.dir, '..', 'fixtures', 'corpus')

/** Messages this large are received while `/health` is asked over and over (test/support/corpus-probe.ts). */
export const HEALTH_CHECKED_FROM_BYTES = 1024 * 1024

const asSent = (raw: Buffer): Buffer =>
  Buffer.from(
    raw
      .toString('latin1')
      .replace(/\r?\n/g, '\r\n')
      .replace(/(?<!\r\n)$/, '\r\n'),
    'latin1',
  )

export interface CorpusMessage {
  name: string
  raw: Buffer
}

export function corpusMessages(): CorpusMessage[] {
  return [
    ...readdirSync(CORPUS_DIR, { recursive: true, encoding: 'utf8' })
      .filter((name) => name.endsWith('.eml'))
      .sort()
      .map((name) => ({ name, raw: asSent(readFileSync(join(CORPUS_DIR, name))) })),
    { name: 'generated/largest-legal.eml', raw: largestLegalMessage() },
    { name: 'generated/1000-attachments.eml', raw: thousandAttachments() },
  ]
}
