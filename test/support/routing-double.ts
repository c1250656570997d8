/**
 * A routing provider the test steers: the stand-in for the external email routing service
 * (the only kind of double our rules allow). Calls can be held until the test releases
 * them, or made to fail the way a provider fails.
 */
import { RoutingError, type RoutingProvider } from '../../src/core/common/routing.ts'

type Failure = 'rejected' | 'unavailable' | 'crash' | null

export class SteerableRouting implements RoutingProvider {
  readonly name = 'steerable'
  readonly rules = new Map<string, string>()
  createFailure: Failure = null
  deleteFailure: Failure = null
  private gate: Promise<void> | null = null
  private openGate: (() => void) | null = null
  private arrivedWaiters: Array<() => void> = []
  /** createRule calls that have started (held or not). */
  createCalls = 0
  private counter = 0

  /** From now on createRule waits until release() is called. */
  hold(): void {
    this.gate = new Promise((resolve) => (this.openGate = resolve))
  }

  release(): void {
    this.openGate?.()
    this.gate = null
    this.openGate = null
  }

  /** Resolves once `n` createRule calls have started in total. */
  async createCallsReach(n: number): Promise<void> {
    while (this.createCalls < n) await new Promise<void>((resolve) => this.arrivedWaiters.push(resolve))
  }

  async createRule(address: string): Promise<string | null> {
    this.createCalls++
    for (const wake of this.arrivedWaiters.splice(0)) wake()
    if (this.gate) await this.gate
    this.fail(this.createFailure)
    const id = `rule_${++this.counter}`
    this.rules.set(address, id)
    return id
  }

  async deleteRule(ruleId: string | null, address: string): Promise<void> {
    this.fail(this.deleteFailure)
    if (this.rules.get(address) === ruleId) this.rules.delete(address)
  }

  private fail(failure: Failure): void {
    if (failure === 'crash') throw new TypeError('provider client bug')
    if (failure) throw new RoutingError(failure, `provider ${failure}`)
  }
}
