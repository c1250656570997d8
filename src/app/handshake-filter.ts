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
 * A handshake already under way when the filter is attached (its SYN answered, the client's
 * ACK on its way: SYN_RECV) completes within a round trip; the stop counts those, and the
 * connections waiting in the backlogs, and accepts until none is left (src/app/listeners.ts).
 * A busy host can hold a loopback handshake in SYN_RECV for milliseconds.
 *
 * The listening sockets are found among this process's descriptors (neither Bun.serve nor
 * node:net exposes them) by asking each socket whether it listens and on which port, with
 * libc's getsockopt and getsockname, and the handshakes under way are counted with one
 * sock_diag request per address family (https://man7.org/linux/man-pages/man7/sock_diag.7.html)
 * asking for SYN_RECV sockets only: no read of /proc/net/tcp, which lists every socket of the
 * host and costs tens of milliseconds of CPU where thousands are open.
 *
 * Elsewhere (not Linux, no libc to load) nothing is attached and the stop is as before.
 */
import { dlopen, FFIType, type Pointer, ptr } from 'bun:ffi'
import { readdirSync, readlinkSync } from 'node:fs'

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
const SO_ACCEPTCONN = 30
const IPPROTO_TCP = 6
const TCP_INFO = 11
/** struct tcp_info: on a listening socket, tcpi_unacked counts the connections ready for accept(). */
const TCPI_UNACKED_OFFSET = 24

/** struct sock_filter { u16 code; u8 jt; u8 jf; u32 k } per instruction; the kernel copies it at attach. */
const instructions = new DataView(new ArrayBuffer(PROGRAM.length * 8))
PROGRAM.forEach(([code, jt, jf, k], i) => {
  instructions.setUint16(i * 8, code, true)
  instructions.setUint8(i * 8 + 2, jt)
  instructions.setUint8(i * 8 + 3, jf)
  instructions.setUint32(i * 8 + 4, k, true)
})

interface Sockets {
  /** Whether `fd` is a listening socket bound to one of `ports`. */
  listensOn(fd: number, ports: number[]): boolean
  attachFilter(fd: number): boolean
  /** Connections completed into the listening socket's backlog, not yet accepted. */
  waiting(fd: number): number
  /** TCP sockets in SYN_RECV on a local port of `ports` (0 if the kernel cannot be asked). */
  handshaking(ports: number[]): number
}

type GetSockOpt = (fd: number, level: number, name: number, value: Pointer, length: Pointer) => number
type SetSockOpt = (fd: number, level: number, name: number, value: Pointer, length: number) => number
type GetSockName = (fd: number, address: Pointer, length: Pointer) => number
type Socket = (domain: number, type: number, protocol: number) => number
type Transfer = (fd: number, buffer: Pointer, length: number, flags: number) => number | bigint
type Close = (fd: number) => number

const AF_INET = 2
const AF_INET6 = 10
const AF_NETLINK = 16
const SOCK_DGRAM = 2
const SOCK_CLOEXEC = 0o2000000
const NETLINK_SOCK_DIAG = 4
const SOCK_DIAG_BY_FAMILY = 20
const NLM_F_REQUEST_DUMP = 0x301
const NLMSG_ERROR = 2
const NLMSG_DONE = 3
const TCP_SYN_RECV = 3
const SO_RCVTIMEO = 20
/** struct timeval { tv_sec; tv_usec } of 100 ms. */
const RECEIVE_TIMEOUT = new BigInt64Array([0n, 100_000n])

/**
 * One sock_diag dump of the TCP sockets in SYN_RECV of one address family: a struct nlmsghdr
 * (16 bytes) then a struct inet_diag_req_v2 (family, protocol, extensions, pad, the states
 * bitmask, and a zero socket id: 56 bytes). Each answer is an inet_diag_msg whose socket id
 * begins with the local port, in network order, 4 bytes in.
 */
function countSynRecv(
  libc: { socket: Socket; send: Transfer; recv: Transfer; close: Close; setsockopt: SetSockOpt },
  ports: number[],
): number {
  const fd = libc.socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG)
  if (fd < 0) return 0
  // The kernel answers a dump at once; a receive that waited would stall the whole event loop.
  if (libc.setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, ptr(RECEIVE_TIMEOUT), RECEIVE_TIMEOUT.byteLength) !== 0) {
    libc.close(fd)
    return 0
  }
  const request = new DataView(new ArrayBuffer(72))
  const answer = new Uint8Array(32 * 1024)
  const view = new DataView(answer.buffer)
  let count = 0
  try {
    for (const family of [AF_INET, AF_INET6]) {
      request.setUint32(0, request.byteLength, true)
      request.setUint16(4, SOCK_DIAG_BY_FAMILY, true)
      request.setUint16(6, NLM_F_REQUEST_DUMP, true)
      request.setUint8(16, family)
      request.setUint8(17, IPPROTO_TCP)
      request.setUint32(20, 1 << TCP_SYN_RECV, true)
      if (Number(libc.send(fd, ptr(request), request.byteLength, 0)) !== request.byteLength) return count
      for (let done = false; !done; ) {
        const received = Number(libc.recv(fd, ptr(answer), answer.byteLength, 0))
        if (received <= 0) return count
        for (let at = 0; at + 16 <= received; ) {
          const length = view.getUint32(at, true)
          const type = view.getUint16(at + 4, true)
          if (type === NLMSG_DONE || type === NLMSG_ERROR || length < 16) {
            done = true
            break
          }
          if (ports.includes(view.getUint16(at + 16 + 4, false))) count++
          at += (length + 3) & ~3
        }
      }
    }
    return count
  } finally {
    libc.close(fd)
  }
}

/** libc's socket calls; loaded on first use, null where unavailable. */
let sockets: Sockets | null | undefined

function loadSockets(): Sockets | null {
  if (process.platform !== 'linux') return null
  try {
    const { symbols } = dlopen('libc.so.6', {
      getsockopt: { args: [FFIType.i32, FFIType.i32, FFIType.i32, FFIType.ptr, FFIType.ptr], returns: FFIType.i32 },
      setsockopt: { args: [FFIType.i32, FFIType.i32, FFIType.i32, FFIType.ptr, FFIType.u32], returns: FFIType.i32 },
      getsockname: { args: [FFIType.i32, FFIType.ptr, FFIType.ptr], returns: FFIType.i32 },
      socket: { args: [FFIType.i32, FFIType.i32, FFIType.i32], returns: FFIType.i32 },
      send: { args: [FFIType.i32, FFIType.ptr, FFIType.u64, FFIType.i32], returns: FFIType.i64 },
      recv: { args: [FFIType.i32, FFIType.ptr, FFIType.u64, FFIType.i32], returns: FFIType.i64 },
      close: { args: [FFIType.i32], returns: FFIType.i32 },
    })
    const netlink = {
      socket: symbols.socket as Socket,
      send: symbols.send as Transfer,
      recv: symbols.recv as Transfer,
      close: symbols.close as Close,
      setsockopt: symbols.setsockopt as SetSockOpt,
    }
    const getsockopt = symbols.getsockopt as GetSockOpt
    const setsockopt = symbols.setsockopt as SetSockOpt
    const getsockname = symbols.getsockname as GetSockName
    // struct sock_fprog { u16 len; struct sock_filter *filter } (the pointer 8-aligned)
    const fprog = new DataView(new ArrayBuffer(16))
    fprog.setUint16(0, PROGRAM.length, true)
    fprog.setBigUint64(8, BigInt(ptr(instructions)), true)
    const value = new DataView(new ArrayBuffer(256))
    const length = new Uint32Array(1)
    const option = (fd: number, level: number, name: number): DataView | null => {
      length[0] = value.byteLength
      return getsockopt(fd, level, name, ptr(value), ptr(length)) === 0 ? value : null
    }
    return {
      listensOn(fd, ports) {
        if (option(fd, SOL_SOCKET, SO_ACCEPTCONN)?.getInt32(0, true) !== 1) return false
        length[0] = value.byteLength
        if (getsockname(fd, ptr(value), ptr(length)) !== 0) return false
        // sockaddr_in and sockaddr_in6 alike: the family, then the port in network order.
        const family = value.getUint16(0, true)
        return (family === AF_INET || family === AF_INET6) && ports.includes(value.getUint16(2, false))
      },
      attachFilter: (fd) => setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, ptr(fprog), fprog.byteLength) === 0,
      waiting: (fd) => option(fd, IPPROTO_TCP, TCP_INFO)?.getUint32(TCPI_UNACKED_OFFSET, true) ?? 0,
      handshaking: (ports) => countSynRecv(netlink, ports),
    }
  } catch {
    return null
  }
}

/** This process's descriptors of its listening sockets on `ports`. */
function listeningDescriptors(calls: Sockets, ports: number[]): number[] {
  const found: number[] = []
  for (const name of readdirSync('/proc/self/fd')) {
    let target: string
    try {
      target = readlinkSync(`/proc/self/fd/${name}`)
    } catch {
      continue // closed since the listing
    }
    if (target.startsWith('socket:') && calls.listensOn(Number(name), ports)) found.push(Number(name))
  }
  return found
}

export interface FilteredListeners {
  /** Connections the process has not accepted yet: in the listeners' backlogs, or their handshakes under way. */
  waiting(): number
}

/**
 * The listening sockets on `ports` stop completing new handshakes (see above); connections
 * already in their backlog, or whose handshake is under way, are still accepted. Null where
 * the filter is unavailable or no listener got it.
 */
export function refuseNewHandshakes(ports: number[]): FilteredListeners | null {
  if (sockets === undefined) sockets = loadSockets()
  const calls = sockets
  if (!calls || ports.length === 0) return null
  let filtered: number[]
  try {
    filtered = listeningDescriptors(calls, ports).filter((fd) => calls.attachFilter(fd))
  } catch {
    return null // /proc/self/fd unreadable (a hardened container): the stop goes on as elsewhere
  }
  if (filtered.length === 0) return null
  return {
    waiting: () => filtered.reduce((sum, fd) => sum + calls.waiting(fd), 0) + calls.handshaking(ports),
  }
}
