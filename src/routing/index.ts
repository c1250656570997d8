import type { Config } from '../config.ts'
import { noRoutingProvider } from './none.ts'
import type { RoutingProvider } from './provider.ts'

/** Picks the provider named by EMAIL_ROUTING. */
export function createRoutingProvider(config: Config): RoutingProvider {
  switch (config.emailRouting) {
    case 'none':
      return noRoutingProvider
    case 'cloudflare':
      throw new Error('EMAIL_ROUTING=cloudflare is not available yet')
  }
}
