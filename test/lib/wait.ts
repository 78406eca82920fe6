// Waiting for background work (the job worker) in tests.

/** Probes until done says so; the suite's timeout bounds the wait. */
export async function eventually<T>(probe: () => Promise<T>, done: (value: T) => boolean): Promise<T> {
  for (;;) {
    const value = await probe()
    if (done(value)) return value
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}
