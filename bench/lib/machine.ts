/** The machine a run happened on, so figures are never quoted without it. */
import { readFileSync } from 'node:fs'
import { availableParallelism, totalmem } from 'node:os'
import { join } from 'node:path'

function maildevVersion(): string {
  try {
    return (
      JSON.parse(
        readFileSync(join(import.meta.dir, '..', '..', 'node_modules', 'maildev', 'package.json'), 'utf8'),
      ) as { version: string }
    ).version
  } catch {
    return 'unknown'
  }
}

export function machine() {
  const cpuinfo = readFileSync('/proc/cpuinfo', 'utf8')
  const node = Bun.spawnSync({ cmd: ['node', '--version'] })
    .stdout.toString()
    .trim()
  return {
    nproc: availableParallelism(),
    cpu: /model name\s*:\s*(.*)/.exec(cpuinfo)?.[1]?.trim() ?? 'unknown',
    memory_gib: Number((totalmem() / 1024 ** 3).toFixed(1)),
    kernel: readFileSync('/proc/sys/kernel/osrelease', 'utf8').trim(),
    bun: Bun.version,
    node,
    maildev: maildevVersion(),
  }
}
