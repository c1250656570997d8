/**
 * The web console: a second transport beside src/http and src/smtp, answering /setup and
 * /console/... on the same port. The composition root (src/app.ts) sends those paths
 * here before the API sees them. Every route is listed in one place below.
 */
import { type GuessThrottle, SignInThrottle } from '../core/users/sign-in-throttle.ts'
import type { Services } from '../core/common/services.ts'
import type { ConnectionTimeouts } from '../web/connection-timeouts.ts'
import type { ConsoleDeps } from './context.ts'
import { type AccessEnded, LiveStreams, type SharedStreamSlots } from './live-streams.ts'
import { consoleRouter, type Route } from './router.ts'
import { ShownOnce } from './shown-once.ts'
import { accountRoutes } from './routes/account.tsx'
import { adminRoutes } from './routes/admin.tsx'
import { assetRoutes } from './routes/assets.ts'
import { authRoutes } from './routes/auth.tsx'
import { keyRoutes } from './routes/keys.tsx'
import { memberRoutes } from './routes/members.tsx'
import { organizationRoutes } from './routes/organization.tsx'
import { setupRoutes } from './routes/setup.tsx'
import { inboxRoutes } from './routes/inboxes.tsx'
import { messageRoutes } from './routes/messages.tsx'
import { liveRoutes } from './routes/live.ts'

export { isConsolePath } from './router.ts'

export const CONSOLE_ROUTES: Route[] = [
  ...assetRoutes,
  ...setupRoutes,
  ...authRoutes,
  ...accountRoutes,
  ...organizationRoutes,
  ...memberRoutes,
  ...keyRoutes,
  ...inboxRoutes,
  ...messageRoutes,
  ...liveRoutes,
  ...adminRoutes,
]

export interface Console {
  handle(request: Request, clientAddress: string): Promise<Response>
  deps: ConsoleDeps
}

/** What PostgreSQL mode counts across machines instead of in this process. */
export interface SharedConsoleCounts {
  streamSlots: SharedStreamSlots
  signInThrottle: GuessThrottle
  /** Ended sessions and memberships, told to every machine's live streams. */
  accessEnded: AccessEnded
}

/**
 * `smtpAddress` names the SMTP listener for the pages' examples; it is known once it listens.
 * `shared` (PostgreSQL mode) counts the live-stream bounds and password guesses across machines.
 */
export function buildConsole(
  s: Services,
  connections: ConnectionTimeouts,
  smtpAddress: () => string,
  shared: SharedConsoleCounts | null = null,
): Console {
  const deps: ConsoleDeps = {
    s,
    throttle: shared?.signInThrottle ?? new SignInThrottle(s.clock),
    lifetime: { days: s.config.consoleSessionDays },
    secureCookies: s.publicUrls().baseUrl.startsWith('https:'),
    smtpAddress,
    streams: new LiveStreams(shared?.streamSlots ?? null, shared?.accessEnded ?? null),
    connections,
    shownOnce: new ShownOnce(s.clock),
  }
  return { handle: consoleRouter(deps, CONSOLE_ROUTES), deps }
}
