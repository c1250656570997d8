/**
 * Starts the real server as `bun src/index.ts` does for a newcomer (fresh temp database,
 * ports picked free), and reads the setup link it prints to the terminal.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

export interface E2eServer {
  baseUrl: string
  smtpPort: number
  setupUrl: string
  stop(): Promise<void>
}

export const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const probe = createServer()
    probe.once('error', reject)
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number }
      probe.close(() => resolve(port))
    })
  })

export async function startServer(env: Record<string, string> = {}): Promise<E2eServer> {
  const dir = mkdtempSync(join(tmpdir(), 'pigeonhole-e2e-'))
  const [port, smtpPort] = [await freePort(), await freePort()]
  const child: ChildProcess = spawn('bun', ['src/index.ts'], {
    cwd: fileURLToPath(new URL('..', import.meta.url)),
    env: {
      ...process.env,
      PORT: String(port),
      SMTP_PORT: String(smtpPort),
      HOST: '127.0.0.1',
      DATABASE_PATH: join(dir, 'db.sqlite'),
      LOG_LEVEL: 'info',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let printed = ''
  const setupUrl = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no setup link printed:\n${printed}`)), 20_000)
    child.stderr!.on('data', (chunk: Buffer) => {
      printed += chunk.toString()
      // The plain line a newcomer sees in the terminal, not the JSON log.
      const match = /^\s+(http:\/\/\S+\/setup\?token=\S+)\s*$/m.exec(printed)
      if (match) {
        clearTimeout(timer)
        resolve(match[1]!)
      }
    })
    child.stdout!.resume()
    child.once('exit', (code) => reject(new Error(`server exited with ${code}:\n${printed}`)))
  })
  return {
    baseUrl: `http://localhost:${port}`,
    smtpPort,
    setupUrl,
    stop: async () => {
      const exited = new Promise((resolve) => child.once('exit', resolve))
      child.kill('SIGTERM')
      await exited
      rmSync(dir, { recursive: true, force: true })
    },
  }
}
