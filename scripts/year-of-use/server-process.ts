/** The real server and the admin CLI as processes, as an operator runs them. */
import { join } from 'node:path'

const ROOT = join(import.meta.dir, '..', '..')

export interface ServerProcess {
  httpUrl: string
  smtpPort: number
  stop(): Promise<void>
}

/** Starts `bun src/index.ts` with `env` on free ports (its banner into `bannerFile`); resolves once HTTP and SMTP listen. */
export async function startServer(env: Record<string, string>, bannerFile: string): Promise<ServerProcess> {
  const child = Bun.spawn([process.execPath, 'src/index.ts'], {
    cwd: ROOT,
    env: { ...process.env, PORT: '0', SMTP_PORT: '0', HOST: '127.0.0.1', ...env },
    stdout: 'pipe',
    stderr: Bun.file(bannerFile),
  })
  const ports: Record<string, number> = {}
  const reader = child.stdout.getReader()
  let buffered = ''
  while (!ports.http_listening || !ports.smtp_listening) {
    const { value, done } = await reader.read()
    if (done) throw new Error('the server exited before listening')
    buffered += new TextDecoder().decode(value)
    const lines = buffered.split('\n')
    buffered = lines.pop()!
    for (const line of lines) {
      if (!line.startsWith('{')) continue
      const event = JSON.parse(line)
      if (event.event?.endsWith('_listening')) ports[event.event] = event.port
    }
  }
  // Keep reading, so a full pipe never stalls the server's logging.
  void (async () => {
    while (!(await reader.read()).done) {}
  })()
  return {
    httpUrl: `http://127.0.0.1:${ports.http_listening}`,
    smtpPort: ports.smtp_listening!,
    async stop() {
      child.kill('SIGTERM')
      await child.exited
    },
  }
}

/** Runs `bun src/cli.ts …`; throws with its stderr unless it exits 0. Resolves with stdout's last line. */
export async function cli(env: Record<string, string>, ...args: string[]): Promise<string> {
  const child = Bun.spawn([process.execPath, 'src/cli.ts', ...args], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdout: 'pipe',
    stderr: 'pipe',
  })
  const [stdout, stderr, code] = await Promise.all([
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
    child.exited,
  ])
  if (code !== 0) throw new Error(`cli ${args.join(' ')} exited ${code}: ${stderr}`)
  return stdout.trimEnd().split('\n').at(-1) ?? ''
}
