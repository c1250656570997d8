/**
 * A stop's last step on a listener is closing it, and closing a listening socket resets every
 * connection the kernel completed into its backlog and the process has not accepted yet. The
 * stop accepts that backlog first, but a handshake the kernel completes after that last accept
 * and before the close is still reset: the client (or the proxy in front) saw the connection
 * open, then lost it before any greeting, and nothing tells it to go elsewhere. No ordering of
 * accepts and closes in the process can rule that out, since the kernel completes handshakes
 * on its own; with a sender connecting every few milliseconds, a rolling restart hit it.
 *
 * So the kernel must stop completing handshakes first. On Linux a socket filter (classic BPF,
 * SO_ATTACH_FILTER, https://docs.kernel.org/networking/filter.html) on the listening socket
 * sees each segment that reaches it; the one below drops a segment with SYN set and ACK clear
 * (a connection's opening) and passes everything else, so handshakes already under way still
 * complete and are accepted. A dropped SYN is sent again by the client after its
 * retransmission timeout (1 s on Linux, RFC 6298), by when the listener is closed: the kernel
 * answers it with a reset, which the client sees as "connection refused", the one failure a
 * proxy moves to another machine and a sender retries at once.
 *
 * Elsewhere (not Linux, no libc to load) nothing is attached and the stop is as before.
 */
import { dlopen, FFIType, type Pointer, ptr } from 'bun:ffi'
import { readdirSync, readFileSync, readlinkSync } from 'node:fs'

/** The program: A = TCP flags byte; drop when (flags & (SYN|ACK)) == SYN, else keep the segment whole. */
const PROGRAM: [code: number, jt: number, jf: number, k: number][] = [
  [0x30, 0, 0, 13], // BPF_LD|BPF_B|BPF_ABS: the byte at offset 13 of the TCP header (the flags)
  [0x54, 0, 0, 0x12], // BPF_ALU|BPF_AND|BPF_K: keep SYN (0x02) and ACK (0x10)
  [0x15, 0, 1, 0x02], // BPF_JMP|BPF_JEQ|BPF_K: SYN alone? then the next, else skip it
  [0x06, 0, 0, 0], // BPF_RET: drop
  [0x06, 0, 0, 0xffff_ffff], // BPF_RET: keep all of it
]

const SOL_SOCKET = 1
const SO_ATTACH_FILTER = 26

/** struct sock_filter { u16 code; u8 jt; u8 jf; u32 k } per instruction; the kernel copies it at attach. */
const instructions = new DataView(new ArrayBuffer(PROGRAM.length * 8))
PROGRAM.forEach(([code, jt, jf, k], i) => {
  instructions.setUint16(i * 8, code, true)
  instructions.setUint8(i * 8 + 2, jt)
  instructions.setUint8(i * 8 + 3, jf)
  instructions.setUint32(i * 8 + 4, k, true)
})

type SetSockOpt = (fd: number, level: number, name: number, value: Pointer, length: number) => number

/** Attaches the program to one descriptor; loaded on first use, null where unavailable. */
let attach: ((fd: number) => boolean) | null | undefined

function loadAttach(): ((fd: number) => boolean) | null {
  if (process.platform !== 'linux') return null
  try {
    const libc = dlopen('libc.so.6', {
      setsockopt: { args: [FFIType.i32, FFIType.i32, FFIType.i32, FFIType.ptr, FFIType.u32], returns: FFIType.i32 },
    })
    const setsockopt = libc.symbols.setsockopt as SetSockOpt
    // struct sock_fprog { u16 len; struct sock_filter *filter } (the pointer 8-aligned)
    const fprog = new DataView(new ArrayBuffer(16))
    fprog.setUint16(0, PROGRAM.length, true)
    fprog.setBigUint64(8, BigInt(ptr(instructions)), true)
    return (fd) => setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, ptr(fprog), fprog.byteLength) === 0
  } catch {
    return null
  }
}

interface SocketRow {
  /** The local port. */
  port: number
  /** `st` in hex: 0A is LISTEN, 03 SYN_RECV (a handshake under way on a listener's port). */
  state: string
  /** A listener's `rx_queue`: connections completed into its backlog, not yet accepted. */
  queued: number
  inode: string
}

/** The kernel's TCP sockets, IPv4 and IPv6 (/proc/net/tcp{,6}, https://docs.kernel.org/networking/proc_net_tcp.html). */
function tcpSockets(): SocketRow[] {
  const rows: SocketRow[] = []
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text: string
    try {
      text = readFileSync(table, 'utf8')
    } catch {
      continue
    }
    for (const line of text.split('\n').slice(1)) {
      // sl, local_address (hex address:port), rem_address, st, tx_queue:rx_queue, …, inode (the 10th)
      const fields = line.trim().split(/\s+/)
      if (fields.length < 10) continue
      rows.push({
        port: Number.parseInt(fields[1]!.split(':').pop()!, 16),
        state: fields[3]!,
        queued: Number.parseInt(fields[4]!.split(':')[1] ?? '0', 16),
        inode: fields[9]!,
      })
    }
  }
  return rows
}

/** Inodes of the listening TCP sockets on `ports`. */
function listeningInodes(ports: number[]): Set<string> {
  return new Set(
    tcpSockets()
      .filter((row) => row.state === '0A' && ports.includes(row.port))
      .map((row) => row.inode),
  )
}

/**
 * Connections on `ports` the stop must still accept before closing: handshakes under way
 * (SYN_RECV: the SYN came before the filter, the client's ACK is on its way) and connections
 * waiting in a listener's backlog. Only a listener can have SYN_RECV sockets on its port.
 */
export function connectionsUnaccepted(ports: number[]): number {
  let count = 0
  for (const row of tcpSockets()) {
    if (!ports.includes(row.port)) continue
    if (row.state === '03') count++
    else if (row.state === '0A') count += row.queued
  }
  return count
}

/** This process's descriptors of the listening sockets on `ports` (neither Bun.serve nor node:net exposes them). */
function listeningDescriptors(ports: number[]): number[] {
  const inodes = listeningInodes(ports.filter((port) => port > 0))
  if (inodes.size === 0) return []
  const found: number[] = []
  for (const name of readdirSync('/proc/self/fd')) {
    let target: string
    try {
      target = readlinkSync(`/proc/self/fd/${name}`)
    } catch {
      continue // closed since the listing
    }
    const inode = /^socket:\[(\d+)\]$/.exec(target)?.[1]
    if (inode && inodes.has(inode)) found.push(Number(name))
  }
  return found
}

/**
 * The listening sockets on `ports` stop completing new handshakes (see above); connections
 * already in their backlog, or whose handshake is under way, are still accepted. Returns how
 * many listening sockets got the filter: 0 where it is unavailable.
 */
export function refuseNewHandshakes(ports: number[]): number {
  if (attach === undefined) attach = loadAttach()
  if (!attach) return 0
  let attached = 0
  try {
    for (const fd of listeningDescriptors(ports)) if (attach(fd)) attached++
  } catch {
    // /proc unreadable (a hardened container): the stop goes on as it would elsewhere.
  }
  return attached
}
