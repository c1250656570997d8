/**
 * Runs one child process with our stdio and passes SIGTERM/SIGINT on to it. The entry has
 * no exec() to replace itself, so it stays as a thin parent whose exit code is the child's.
 */
import { constants } from 'node:os'

interface ChildOptions {
  env: Record<string, string | undefined>
  /** Set when the entry runs as root and hands the work to an unprivileged user. */
  user?: { uid: number; gid: number }
  /** SIGTERM/SIGINT arriving earlier than this after the start are held back until then. */
  minUptimeMs?: number
}

export async function runChild(cmd: string[], options: ChildOptions): Promise<number> {
  let child: ReturnType<typeof Bun.spawn>
  try {
    child = Bun.spawn(cmd, {
      env: options.env,
      stdio: ['ignore', 'inherit', 'inherit'],
      ...(options.user ? { uid: options.user.uid, gid: options.user.gid } : {}),
    })
  } catch (error) {
    throw new Error(`cannot start ${cmd[0]}: ${error instanceof Error ? error.message : String(error)}`)
  }
  const startedAt = Date.now()
  const forward = (signal: NodeJS.Signals) => () => {
    const hold = startedAt + (options.minUptimeMs ?? 0) - Date.now()
    if (hold > 0) setTimeout(() => child.kill(signal), hold)
    else child.kill(signal)
  }
  const handlers = (['SIGTERM', 'SIGINT'] as const).map((signal) => [signal, forward(signal)] as const)
  for (const [signal, handler] of handlers) process.on(signal, handler)
  try {
    const code = await child.exited
    // Killed by a signal: report it the shell way (128 + number) rather than success.
    const signal = child.signalCode
    if (signal === null) return code
    return 128 + (typeof signal === 'number' ? signal : constants.signals[signal])
  } finally {
    for (const [signal, handler] of handlers) process.off(signal, handler)
  }
}
