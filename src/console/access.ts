/**
 * Who may reach a console route, declared on the route and resolved by the router before
 * the handler runs (after the form's Origin and CSRF checks, so a forged POST is refused
 * the same way whoever sends it). The handler receives what was resolved, typed by the
 * level it declared, and repeats no check:
 *
 * - `public`: anyone; the signed-in user if there is one.
 * - `signed-in`: a session; otherwise a GET goes to sign-in and a POST is 401.
 * - `operator`: the instance operator; to anyone else the page does not exist (404).
 * - `member`: a member of the organisation in the path's `:org`; to anyone else, and for
 *   an unknown id, 404, so another organisation's ids cannot be told from made-up ones.
 * - `owner`: the same, and an owner of it; a plain member gets 403.
 */
import type { Principal } from '../core/api-keys/authenticate.ts'
import { Refusal, notFound } from '../core/common/refusals.ts'
import { consolePrincipal, requireMembership, type Membership, type Role } from '../core/organizations/organizations.ts'
import type { ValidSession } from '../core/sessions/sessions.ts'
import type { User } from '../core/users/users.ts'
import type { ConsoleRequest } from './context.ts'

export const ACCESS_LEVELS = ['public', 'signed-in', 'operator', 'member', 'owner'] as const
export type Access = (typeof ACCESS_LEVELS)[number]

export interface Visitor {
  user: User | null
}

export interface SignedIn {
  user: User
  session: ValidSession
}

export interface Member extends SignedIn {
  /** The organisation in the path, with the user's role in it. */
  org: Membership
  /** The organisation as the domain verbs' Principal (with its own limits), as /v1 would see its key. */
  principal: Principal
}

/** What a handler of a route with access `A` receives. */
export type Resolved<A extends Access> = A extends 'public' ? Visitor : A extends 'member' | 'owner' ? Member : SignedIn

export const isAccess = (value: unknown): value is Access => (ACCESS_LEVELS as readonly unknown[]).includes(value)

/** Access levels that read the organisation from the path's `:org`. */
export const needsOrganization = (access: Access): boolean => access === 'member' || access === 'owner'

function signedIn(ctx: ConsoleRequest): SignedIn {
  if (!ctx.session) throw new Refusal('unauthenticated', 'Sign in to continue.')
  return { user: ctx.session.user, session: ctx.session }
}

/**
 * The signed-in user's membership of `organizationId` (with `role`, when given). Also the
 * live stream's check of each inbox it watches, which names organisations in its query.
 */
export async function memberOf(ctx: ConsoleRequest, organizationId: string, role?: Role): Promise<Member> {
  const who = signedIn(ctx)
  const { membership: org, limits } = await requireMembership(ctx.s, who.user, { organizationId, role })
  return { ...who, org, principal: consolePrincipal(org.organizationId, limits) }
}

/** Resolves `access` for this request, or throws the Refusal its refusal is. */
export function resolveAccess<A extends Access>(
  ctx: ConsoleRequest,
  access: A,
  organizationId: string | undefined,
): Promise<Resolved<A>>
export async function resolveAccess(
  ctx: ConsoleRequest,
  access: Access,
  organizationId: string | undefined,
): Promise<Visitor | SignedIn | Member> {
  switch (access) {
    case 'public':
      return { user: ctx.user }
    case 'signed-in':
      return signedIn(ctx)
    case 'operator': {
      const who = signedIn(ctx)
      if (!who.user.isOperator) throw notFound()
      return who
    }
    case 'member':
    case 'owner':
      // The router refuses to register a member route without `:org`, so this holds.
      return memberOf(ctx, organizationId!, access === 'owner' ? 'owner' : undefined)
  }
}
