/** The contract suite's harness: each half runs core's verbs on the dialect it names. */
import { expect, setDefaultTimeout, test } from 'bun:test'
import { describeEachBackend } from '../support/backends.ts'

setDefaultTimeout(60_000)

describeEachBackend('the contract harness', (backend) => {
  test('hands the verbs a store of its own dialect', () => {
    expect(backend.services().store.dialect).toBe(backend.dialect)
  })
})
