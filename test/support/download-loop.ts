/**
 * Many clients downloading one file again and again, as a process of its own: a test that
 * measures another client's latency meanwhile measures the server, not its own event loop
 * busy receiving these bodies. Run as
 * `bun test/support/download-loop.ts <url> <bearer key> <clients> <milliseconds> <sha256 of the file>`;
 * prints one JSON line: how many answers were the file's exact bytes, how many were 429
 * `rate_limit_exceeded` with `Retry-After: 1`, and anything else as it came.
 */
import { createHash } from 'node:crypto'

const [url, key, clients, milliseconds, sha256] = process.argv.slice(2)
const until = performance.now() + Number(milliseconds)
const tally = { served: 0, refused: 0, other: [] as string[] }
await Promise.all(
  Array.from({ length: Number(clients) }, async () => {
    while (performance.now() < until) {
      const response = await fetch(url!, { headers: { authorization: `Bearer ${key}` } })
      const body = Buffer.from(await response.arrayBuffer())
      if (response.status === 200 && createHash('sha256').update(body).digest('hex') === sha256) tally.served++
      else if (
        response.status === 429 &&
        response.headers.get('retry-after') === '1' &&
        JSON.parse(body.toString()).error?.code === 'rate_limit_exceeded'
      ) {
        tally.refused++
        await Bun.sleep(50)
      } else tally.other.push(`${response.status} ${body.subarray(0, 200).toString()}`)
    }
  }),
)
console.log(JSON.stringify(tally))
