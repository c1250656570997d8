/**
 * One self-signed STARTTLS certificate per test process. The server keeps its certificate
 * beside the database and makes one in a child process when none is there (its cost:
 * bench/README.md); laying the same pair into each fresh test folder spares every test
 * server that cost, and the server still takes its own path of a restart that finds its
 * certificate. Servers with another RECEIVING_DOMAIN make their own, as in production.
 */
import { copyFileSync, existsSync, mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { loadConfig } from '../../src/config.ts'
import { createLogger } from '../../src/log.ts'
import { selfSigned, selfSignedPaths } from '../../src/smtp/self-signed.ts'
import { processScratchDir } from './scratch.ts'

export const SEED_DOMAIN = 'inbox.test'

let seed: Promise<ReturnType<typeof selfSignedPaths>> | undefined

function makeSeed(): Promise<ReturnType<typeof selfSignedPaths>> {
  seed ??= (async () => {
    // The process's, not a file's: the next file this process runs lays down the same pair.
    const dir = processScratchDir('pigeonhole-tls-seed-')
    const config = loadConfig({ DATABASE_PATH: join(dir, 'seed.db'), RECEIVING_DOMAIN: SEED_DOMAIN })
    await selfSigned(config, createLogger('silent'), Date.now())
    return selfSignedPaths(config.databasePath)
  })()
  return seed
}

/**
 * Puts the process's certificate where a server on `databasePath` looks for its own. With
 * `keep`, a certificate already there stays (a restart finds the one its first start had).
 */
export async function layDownSelfSigned(
  databasePath: string,
  receivingDomain: string,
  options: { keep?: boolean } = {},
): Promise<void> {
  if (receivingDomain !== SEED_DOMAIN) return
  const to = selfSignedPaths(databasePath)
  if (options.keep && existsSync(to.cert) && existsSync(to.key)) return
  const from = await makeSeed()
  mkdirSync(to.folder, { recursive: true, mode: 0o700 })
  copyFileSync(from.key, to.key)
  copyFileSync(from.cert, to.cert)
}
