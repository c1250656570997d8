/**
 * Phase "big-mail flood": N parallel senders of 9 MiB messages to the server inside a 512 MiB
 * memory cgroup (bench/lib/big-mail-flood.ts), reported beside the disk's own sequential write
 * speed, since a spooled flood is bound by the disk. Skipped, with the reason, where no
 * memory cgroup can be made (not root, no memory controller).
 */
import { diskWriteMiBs, type FloodResult, memoryCgroup, runBigMailFlood } from '../lib/big-mail-flood.ts'
import { ROOT, SERVER_ENTRY } from '../lib/targets.ts'

const MiB = 1024 * 1024

export type BigMailFloodResult = ({ disk_write_mib_s: number } & FloodResult) | { skipped: string }

export async function bigMailFloodPhase(options: {
  senders: number
  messageMiB: number
  cgroupMiB: number
  log: (line: string) => void
}): Promise<BigMailFloodResult> {
  const cgroup = memoryCgroup(options.cgroupMiB * MiB)
  if ('skip' in cgroup) return { skipped: cgroup.skip }
  try {
    const disk = diskWriteMiBs()
    options.log(`disk write speed ${disk} MiB/s`)
    const result = await runBigMailFlood({
      root: ROOT,
      entry: SERVER_ENTRY,
      cgroup,
      senders: options.senders,
      messageBytes: options.messageMiB * MiB,
      log: options.log,
    })
    return { disk_write_mib_s: disk, ...result }
  } finally {
    cgroup.remove()
  }
}
