/**
 * A throwaway rspamd (Debian's `rspamd` package) for the spam-check tests: its own folder,
 * its normal and controller workers on free loopback ports (the proxy worker off), logs to
 * its own file, run in the foreground as a child of the test. Null when rspamd is not
 * installed (`apt-get install rspamd`; CI installs it).
 */
import { spawn, spawnSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { freePort } from './server.ts'

export interface Rspamd {
  url: string
  stop(): Promise<void>
}

export const rspamdInstalled = (): boolean => spawnSync('rspamd', ['--version'], { stdio: 'ignore' }).status === 0

export async function startRspamd(): Promise<Rspamd> {
  const dir = mkdtempSync(join(tmpdir(), 'pigeonhole-rspamd-'))
  const local = join(dir, 'local')
  mkdirSync(join(local, 'override.d'), { recursive: true })
  for (const sub of ['run', 'log']) mkdirSync(join(dir, sub))
  // rspamd compiles its rules and its list of 9,628 top-level domains at start and keeps the
  // result in DBDIR: kept across runs, a start takes about 3 s instead of 30-45 s (measured
  // with a load average of 14 on two cores).
  const cache = join(tmpdir(), 'pigeonhole-rspamd-cache')
  mkdirSync(cache, { recursive: true })
  const [normal, controller] = [await freePort(), await freePort()]
  const override = (file: string, text: string) => writeFileSync(join(local, 'override.d', file), text)
  override('worker-normal.inc', `bind_socket = "127.0.0.1:${normal}";\n`)
  override('worker-controller.inc', `bind_socket = "127.0.0.1:${controller}";\n`)
  override('worker-proxy.inc', 'enabled = false;\n')
  override('logging.inc', `type = "file";\nfilename = "${join(dir, 'log', 'rspamd.log')}";\nlevel = "warning";\n`)
  // --insecure: CI runs as root, which rspamd refuses without it; the workers listen on loopback only.
  const vars = [
    `LOCAL_CONFDIR=${local}`,
    `DBDIR=${cache}`,
    `RUNDIR=${join(dir, 'run')}`,
    `LOGDIR=${join(dir, 'log')}`,
  ].map((v) => `--var=${v}`)
  const child = spawn('rspamd', ['-f', '--insecure', ...vars], { stdio: 'ignore' })
  const exited = new Promise((resolve) => child.once('exit', resolve))
  const url = `http://127.0.0.1:${normal}`
  // It compiles its rules on first start (several seconds, more on a busy machine).
  const deadline = Date.now() + 120_000
  for (;;) {
    if (child.exitCode !== null) throw new Error(`rspamd exited with ${child.exitCode}: ${readLog(dir)}`)
    try {
      if ((await fetch(`${url}/ping`, { signal: AbortSignal.timeout(2000) })).ok) break
    } catch {}
    if (Date.now() > deadline) {
      child.kill('SIGKILL')
      throw new Error(`rspamd did not answer /ping within 120 s: ${readLog(dir)}`)
    }
    await new Promise((resolve) => setTimeout(resolve, 250))
  }
  return {
    url,
    stop: async () => {
      if (child.exitCode === null) child.kill('SIGTERM')
      await exited
      rmSync(dir, { recursive: true, force: true })
    },
  }
}

function readLog(dir: string): string {
  try {
    return readFileSync(join(dir, 'log', 'rspamd.log'), 'utf8').slice(-2000)
  } catch {
    return '(no log)'
  }
}
