/**
 * `bun bench/lib/health-probe.ts <url>`: asks `GET <url>` one request at a time, 50 ms apart,
 * until its stdin closes, then prints `{"slowest_ms":…,"answers":…}` on stdout (answers over
 * `PROBE_LOG_OVER_MS`, if set, are also logged to stderr as they come).
 *
 * A process of its own, for the big-mail flood (big-mail-flood.ts): asked from the load
 * generator's process, a /health answer also waited for that process's event loop, busy
 * writing 200 senders' bytes, and the figure measured the senders as much as the server.
 */
export {}

const url = process.argv[2]
if (!url) throw new Error('usage: bun bench/lib/health-probe.ts <url>')
const logOver = Number(process.env.PROBE_LOG_OVER_MS ?? Number.POSITIVE_INFINITY)
let slowest = 0
let answers = 0
let probing = true
void (async () => {
  for await (const _ of Bun.stdin.stream()) {
    // nothing is sent: the stream ends when the parent closes it
  }
  probing = false
})()
while (probing) {
  const asked = performance.now()
  // A failed request counts with the time it took, as an answer does.
  const answered = await fetch(url)
    .then((response) => response.arrayBuffer())
    .then(
      () => true,
      () => false,
    )
  const took = performance.now() - asked
  if (answered) answers++
  if (took > logOver) console.error(`[health-probe] ${Math.round(took)} ms`)
  slowest = Math.max(slowest, took)
  await Bun.sleep(50)
}
console.log(JSON.stringify({ slowest_ms: Math.round(slowest), answers }))
