/** Starts the demo sign-up app as a child process on a free port; used by our test runs of the examples. */
import { join } from 'node:path'

export interface DemoApp {
  url: string
  stop(): Promise<void>
}

export async function spawnDemoApp(smtpPort: number): Promise<DemoApp> {
  const child = Bun.spawn([process.execPath, join(import.meta.dir, 'server.ts')], {
    env: { ...process.env, APP_URL: 'http://127.0.0.1:0', PIGEONHOLE_SMTP: `127.0.0.1:${smtpPort}` },
    stdout: 'pipe',
    stderr: 'inherit',
  })
  const reader = child.stdout.getReader()
  let out = ''
  while (!/on (http:\/\/\S+)/.test(out)) {
    const { value, done } = await reader.read()
    if (done) throw new Error(`demo app exited early: ${out}`)
    out += new TextDecoder().decode(value)
  }
  reader.releaseLock()
  return {
    url: /on (http:\/\/\S+)/.exec(out)![1]!,
    async stop() {
      child.kill('SIGTERM')
      await child.exited
    },
  }
}
