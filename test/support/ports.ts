/**
 * A loopback port for a process that must be told its port before it starts (an entry beside
 * Litestream, a PostgreSQL cluster, PgBouncer), where port 0 cannot be used.
 *
 * Asking the kernel for port 0 and closing it again hands out a port of the ephemeral range,
 * from which every outgoing connection of the run also takes its local port: with the files
 * running side by side, a connection could take that port before the child binds it ("Port …
 * is already in use"). A port below that range (Linux's net.ipv4.ip_local_port_range) is never
 * given to a connection nor to anyone's port 0, so one is drawn from there at random and
 * checked free.
 */
import { readFileSync } from 'node:fs'

const LOWEST = 10_000

/** The first port of the ephemeral range (Linux's default where it cannot be read). */
function ephemeralStart(): number {
  try {
    return Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]) || 32_768
  } catch {
    return 32_768
  }
}

const below = ephemeralStart()

/** A port nobody listens on now, outside the ephemeral range where there is room below it. */
export function unusedPort(): number {
  for (let attempt = 0; attempt < 200; attempt++) {
    const port = below - LOWEST >= 1000 ? LOWEST + Math.floor(Math.random() * (below - LOWEST)) : 0
    try {
      const probe = Bun.listen({ hostname: '127.0.0.1', port, socket: { data() {} } })
      const taken = probe.port
      probe.stop(true)
      return taken
    } catch {
      // in use: draw again
    }
  }
  throw new Error(`no free loopback port found between ${LOWEST} and ${below}`)
}
