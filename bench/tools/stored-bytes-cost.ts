/**
 * What verifying stored bytes costs: the SHA-256 of the largest legal message (about
 * 9.9 MiB raw, two 3.1 MiB attachments) as written (in the parse worker, beside parseMail,
 * which is timed with it for scale), and as served (on the event loop, once per download
 * of a source or an attachment). Median and max of N runs, one thread.
 *
 *   bun bench/tools/stored-bytes-cost.ts [runs=15]
 */
import { loadConfig } from '../../src/config.ts'
import { parseMail } from '../../src/core/inbound/parse.ts'
import { sha256Hex } from '../../src/core/common/stored-bytes.ts'
import { largestLegalMessage } from '../../test/support/generated-messages.ts'

const runs = Number(process.argv[2] ?? 15)
const limits = loadConfig({ RECEIVING_DOMAIN: 'bench.test' }).limits
const raw = largestLegalMessage()

function timed(work: () => unknown): { median: number; max: number } {
  const times: number[] = []
  for (let i = 0; i < runs; i++) {
    const start = performance.now()
    work()
    times.push(performance.now() - start)
  }
  times.sort((a, b) => a - b)
  return { median: times[times.length >> 1]!, max: times.at(-1)! }
}
const ms = ({ median, max }: { median: number; max: number }) =>
  `median ${median.toFixed(1)} ms, max ${max.toFixed(1)} ms`

const parseTimes: number[] = []
let mail: Awaited<ReturnType<typeof parseMail>> | undefined
for (let i = 0; i < Math.min(runs, 8); i++) {
  const start = performance.now()
  mail = await parseMail(Buffer.from(raw), 'sender@bench.example', limits)
  parseTimes.push(performance.now() - start)
}
parseTimes.sort((a, b) => a - b)
const attachment = mail!.attachments[0]!.content
const rawHash = timed(() => sha256Hex(raw))
const allHashes = timed(() => {
  sha256Hex(raw)
  for (const each of mail!.attachments) sha256Hex(each.content)
})
console.log(
  `largest legal message: ${(raw.byteLength / 2 ** 20).toFixed(2)} MiB raw, ${mail!.attachments.length} attachments of ${(attachment.byteLength / 2 ** 20).toFixed(2)} MiB`,
)
console.log(`parseMail (in the worker, hashes included): median ${parseTimes[parseTimes.length >> 1]!.toFixed(1)} ms`)
console.log(`  of which SHA-256 of raw + attachments: ${ms(allHashes)}`)
console.log(`serving the raw source (.eml), the check: ${ms(rawHash)}`)
console.log(
  `serving one ${(attachment.byteLength / 2 ** 20).toFixed(1)} MiB attachment, the check: ${ms(timed(() => sha256Hex(attachment)))}`,
)
const small = Buffer.alloc(30 * 1024, 7)
console.log(`a 30 KiB attachment, the check: ${ms(timed(() => sha256Hex(small)))}`)
