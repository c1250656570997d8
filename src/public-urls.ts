import type { Config } from './config.ts'

/** The public URLs written into responses (attachment `download_url`s). */
export interface PublicUrls {
  readonly baseUrl: string
  readonly filesUrl: string
}

/** With PORT=0 the default public URLs cannot name the port until the OS picked it. */
export function resolvePublicUrls(config: Config, httpPort: number): PublicUrls {
  const unresolved = 'http://localhost:0'
  const baseUrl = config.baseUrl === unresolved ? `http://localhost:${httpPort}` : config.baseUrl
  return { baseUrl, filesUrl: config.filesUrl === unresolved ? baseUrl : config.filesUrl }
}
