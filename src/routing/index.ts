import type { Config } from '../config.ts'
import type { Logger } from '../log.ts'
import { createCloudflareProvider } from './cloudflare.ts'
import { noRoutingProvider } from './none.ts'
import type { RoutingProvider } from '../core/common/routing.ts'

/** Picks the provider named by EMAIL_ROUTING. */
export function createRoutingProvider(config: Config, logger: Logger): RoutingProvider {
  switch (config.emailRouting) {
    case 'none':
      return noRoutingProvider
    case 'cloudflare':
      return createCloudflareProvider(config, logger)
  }
}
