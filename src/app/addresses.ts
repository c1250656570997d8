/**
 * Where the listeners ended up. PORT=0 and SMTP_PORT=0 let the OS choose, so the parts built
 * before anything listens (the API's download links, the console's example commands) read
 * the addresses from here, and start() records each port once its listener has it.
 */
import type { Config } from '../config.ts'
import { type PublicUrls, resolvePublicUrls } from '../public-urls.ts'

export class ListenAddresses {
  private publicUrls_: PublicUrls
  private smtpPort_: number

  constructor(private readonly config: Config) {
    this.publicUrls_ = resolvePublicUrls(config, config.port)
    this.smtpPort_ = config.smtpPort
  }

  /** BASE_URL and FILES_URL; their defaults name the HTTP port once it is known. */
  publicUrls(): PublicUrls {
    return this.publicUrls_
  }

  /** `host:port` a sender on the BASE_URL's host reaches the SMTP listener at. */
  smtpAddress(): string {
    return `${new URL(this.publicUrls_.baseUrl).hostname}:${this.smtpPort_}`
  }

  httpListening(port: number): void {
    this.publicUrls_ = resolvePublicUrls(this.config, port)
  }

  smtpListening(port: number): void {
    this.smtpPort_ = port
  }
}
