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
  /** Its request line is written (or it has none: a CORS preflight). */
  logged?: boolean
}

/** Per-request state, keyed by the Request object so no module-level state is shared between apps. */
export class RequestRegistry {
  private readonly states = new WeakMap<Request, RequestState>()
  /** Requests begun whose request line is not written yet, and who waits for there to be none. */
  private unlogged = 0
  private idle: (() => void)[] = []
  begin(request: Request): RequestState {
    const state = { id: newRequestId(), startedAt: performance.now() }
    this.states.set(request, state)
    this.unlogged++
    return state
  }
  /** The request's line is written, or it will have none; twice counts once. */
  logged(request: Request): void {
    const state = this.states.get(request)
    if (!state || state.logged) return
    state.logged = true
    this.unlogged--
    if (this.unlogged > 0) return
    for (const resolve of this.idle.splice(0)) resolve()
  }
  /**
   * Settles once every request begun has its line: a stop waits for it after cutting the
   * waiting polls, whose lines are written a moment after their connections close, so the
   * process does not exit before them.
   */
  allLogged(): Promise<void> {
    return this.unlogged === 0 ? Promise.resolve() : new Promise((resolve) => this.idle.push(resolve))
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
