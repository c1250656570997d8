/**
 * `bun run bench:big-mail`: the "big-mail flood" phase on its own (bench/phases/big-mail-flood.ts):
 * 200 parallel senders of 9 MiB messages to the production bundle inside a 512 MiB memory
 * cgroup, the flood's duration and goodput beside the disk's own write speed. SENDERS,
 * MESSAGE_MIB and CGROUP_MIB change the shape; BENCH_SERVER_ENTRY=src/index.ts runs the source.
 * `bun run bench` (full mode) runs the same phase last.
 */
import { bigMailFloodPhase } from './phases/big-mail-flood.ts'

const result = await bigMailFloodPhase({
  senders: Number(process.env.SENDERS ?? 200),
  messageMiB: Number(process.env.MESSAGE_MIB ?? 9),
  cgroupMiB: Number(process.env.CGROUP_MIB ?? 512),
  log: (line) => console.error(`[big-mail flood] ${line}`),
})
console.log(JSON.stringify({ phase: 'big-mail flood', ...result }, null, 2))
