/**
 * A throwaway SpamAssassin spamd (Debian's `spamd` package) for the spam-check tests, on a
 * free loopback port, run in the foreground as a child of the test. Null when spamd is not
 * installed (`apt-get install spamd`; CI installs it).
 */
import { spawn, spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { connect } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { freePort } from './server.ts'

export interface Spamd {
  address: string
  stop(): Promise<void>
}

export const spamdInstalled = (): boolean => spawnSync('spamd', ['--version'], { stdio: 'ignore' }).status === 0

/** True once spamd answers the spamc protocol's PING. */
const pong = (port: number) =>
  new Promise<boolean>((resolve) => {
    const socket = connect({ host: '127.0.0.1', port })
    let answer = ''
    socket.setTimeout(2000, () => socket.destroy())
    socket.on('connect', () => socket.write('PING SPAMC/1.5\r\n\r\n'))
    socket.on('data', (chunk) => (answer += chunk.toString()))
    socket.on('error', () => resolve(false))
    socket.on('close', () => resolve(answer.includes('PONG')))
  })

export async function startSpamd(): Promise<Spamd> {
  const dir = mkdtempSync(join(tmpdir(), 'pigeonhole-spamd-'))
  const port = await freePort()
  // -L: no network tests (CI has no DNS); -u nobody: CI runs as root, which spamd refuses for its children.
  const args = [
    `--listen=127.0.0.1:${port}`,
    '--max-children=1',
    '-L',
    '-u',
    'nobody',
    `--pidfile=${join(dir, 'spamd.pid')}`,
    '--syslog=stderr',
  ]
  const child = spawn('spamd', args, { stdio: 'ignore' })
  const exited = new Promise((resolve) => child.once('exit', resolve))
  const deadline = Date.now() + 120_000
  while (!(await pong(port))) {
    if (child.exitCode !== null) throw new Error(`spamd exited with ${child.exitCode}`)
    if (Date.now() > deadline) {
      child.kill('SIGKILL')
      throw new Error('spamd did not answer PING within 120 s')
    }
    await new Promise((resolve) => setTimeout(resolve, 250))
  }
  return {
    address: `127.0.0.1:${port}`,
    stop: async () => {
      if (child.exitCode === null) child.kill('SIGTERM')
      await exited
      rmSync(dir, { recursive: true, force: true })
    },
  }
}
