import type { Principal } from '../core/api-keys/authenticate.ts'
import { newRequestId } from '../ids.ts'

interface RequestState {
  id: string
  startedAt: number
  /** Set in onRequest, where the URL is parsed once anyway; the request log reads it. */
  path?: string
  principal?: Principal
  /** The error envelope's code, for the request log (and the refusal metrics read from it). */
  errorCode?: string
}

/** Per-request state, keyed by the Request object so no module-level state is shared between apps. */
export class RequestRegistry {
  private readonly states = new WeakMap<Request, RequestState>()
  begin(request: Request): RequestState {
    const state = { id: newRequestId(), startedAt: performance.now() }
    this.states.set(request, state)
    return state
  }
  get(request: Request): RequestState | undefined {
    return this.states.get(request)
  }
  /** The authenticated caller; set for every /v1 request before routing and validation run. */
  principal(request: Request): Principal {
    const principal = this.states.get(request)?.principal
    if (!principal) throw new Error('principal requested on an unauthenticated route')
    return principal
  }
}
