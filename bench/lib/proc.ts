/**
 * Child processes under test: free ports, start, wait until ready, stop, and the two
 * figures read from /proc (CPU time and resident memory) for one pid.
 */
import { readFileSync } from 'node:fs'
import { createConnection, createServer } from 'node:net'
import { sleep } from './stats.ts'

/** Asks the OS for a port that is free right now (a tiny race is acceptable for a bench). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const address = server.address()
      const port = typeof address === 'object' && address ? address.port : 0
      server.close(() => resolve(port))
    })
  })
}

const TICKS_PER_SECOND = 100 // getconf CLK_TCK on Linux x86_64

/**
 * User + system CPU time of the whole process (all threads), in milliseconds; with
 * `mainThreadOnly`, of its main thread alone (the event loop; parse workers excluded).
 */
export function cpuMs(pid: number, mainThreadOnly = false): number {
  const stat = readFileSync(mainThreadOnly ? `/proc/${pid}/task/${pid}/stat` : `/proc/${pid}/stat`, 'utf8')
  // Fields after the ")" that closes the command name; utime and stime are fields 14 and 15.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS_PER_SECOND
}

/** Resident set size in MiB (VmRSS). */
export function rssMiB(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8')
  const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1])
  return kb / 1024
}

/** RSS split into anonymous memory (heap, stacks, malloc) and file-backed pages (mostly the bun binary's own code, shared and reclaimable). */
export function rssParts(pid: number): { rssMiB: number; anonMiB: number; fileMiB: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8')
  const field = (name: string) => Number(new RegExp(`${name}:\\s+(\\d+)`).exec(status)?.[1]) / 1024
  return { rssMiB: field('VmRSS'), anonMiB: field('RssAnon'), fileMiB: field('RssFile') }
}

/**
 * RSS once it has stopped moving (three samples 250 ms apart within 0.5 MiB), so a figure
 * is not taken in the middle of a collection; gives up after `maxMs` and returns the last.
 */
export async function settledRss(pid: number, maxMs = 8000): Promise<ReturnType<typeof rssParts>> {
  const deadline = performance.now() + maxMs
  const samples = [rssParts(pid)]
  while (performance.now() < deadline) {
    await sleep(250)
    samples.push(rssParts(pid))
    const last = samples.slice(-3).map((sample) => sample.rssMiB)
    if (last.length === 3 && Math.max(...last) - Math.min(...last) <= 0.5) break
  }
  return samples.at(-1)!
}

/** Waits until the process has used (almost) no CPU for one sampling interval: async work is done. */
export async function waitQuiet(pid: number, intervalMs = 100, maxMs = 30_000): Promise<void> {
  const deadline = performance.now() + maxMs
  let last = cpuMs(pid)
  while (performance.now() < deadline) {
    await sleep(intervalMs)
    const now = cpuMs(pid)
    if (now - last <= 10) return
    last = now
  }
}

export interface Child {
  name: string
  proc: Bun.Subprocess
  pid: number
  stop(): Promise<void>
}

/** Every child still running when the bench exits (normally or by an error) is killed, so none lingers. */
const running = new Set<Bun.Subprocess>()
process.on('exit', () => {
  for (const proc of running) proc.kill('SIGKILL')
})

/** `stdoutFile` keeps the child's stdout (a server's JSON log lines); by default it is dropped. */
export function spawnChild(
  name: string,
  cmd: string[],
  env: Record<string, string>,
  cwd?: string,
  stdoutFile?: string,
): Child {
  const stdout = stdoutFile ? Bun.file(stdoutFile) : 'ignore'
  const proc = Bun.spawn({ cmd, env: { ...process.env, ...env }, cwd, stdout, stderr: 'inherit', stdin: 'ignore' })
  running.add(proc)
  void proc.exited.then(() => running.delete(proc))
  return {
    name,
    proc,
    pid: proc.pid,
    async stop() {
      if (proc.exitCode !== null || proc.signalCode !== null) return
      proc.kill('SIGTERM')
      const exited = await Promise.race([proc.exited.then(() => true), sleep(5000).then(() => false)])
      if (!exited) {
        proc.kill('SIGKILL')
        await proc.exited
      }
    },
  }
}

/** Polls until `url` answers 200; throws with the child's name if it exits or times out. */
export async function waitHttp(child: Child, url: string, timeoutMs = 20_000): Promise<void> {
  const deadline = performance.now() + timeoutMs
  while (performance.now() < deadline) {
    if (child.proc.exitCode !== null)
      throw new Error(`${child.name} exited with code ${child.proc.exitCode} during start-up`)
    try {
      const response = await fetch(url)
      await response.arrayBuffer()
      if (response.status === 200) return
    } catch {
      // not listening yet
    }
    await sleep(20)
  }
  throw new Error(`${child.name} did not answer ${url} within ${timeoutMs} ms`)
}

/** Waits until a TCP port accepts connections (for SMTP listeners). */
export async function waitTcp(child: Child, port: number, timeoutMs = 20_000): Promise<void> {
  const deadline = performance.now() + timeoutMs
  while (performance.now() < deadline) {
    if (child.proc.exitCode !== null)
      throw new Error(`${child.name} exited with code ${child.proc.exitCode} during start-up`)
    const open = await new Promise<boolean>((resolve) => {
      const socket = createConnection({ port, host: '127.0.0.1' })
      socket.once('connect', () => {
        socket.destroy()
        resolve(true)
      })
      socket.once('error', () => resolve(false))
    })
    if (open) return
    await sleep(20)
  }
  throw new Error(`${child.name} did not listen on ${port} within ${timeoutMs} ms`)
}
