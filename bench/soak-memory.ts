// The memory of the soak's service processes, read from outside them: VmRSS of
// /proc/<pid>/status, sampled every few seconds, and whether it trends upward. RSS
// and not the V8 heap: it is what an orchestrator's memory limit kills on, and it
// needs nothing of the service (no inspection route, no flag).
import { readFileSync } from 'node:fs'

export interface MemorySample {
  /** Seconds since the load began. */
  at: number
  rssMiB: number
}

export interface MemoryTrend {
  /** Before the load, once the process had started. */
  idleMiB: number
  /** The first sample after the warm-up. */
  startMiB: number
  endMiB: number
  peakMiB: number
  /** Least squares over the second half of the measured window, MiB per minute. */
  slopeMiBPerMinute: number
  /** The median of the last samples less the median of the first after the warm-up. */
  netRiseMiB: number
  samplesInSecondHalf: number
  verdict: 'flat' | 'grew' | 'inconclusive'
}

/** VmRSS of a live process in MiB; null once it has exited. */
export function rssMiB(pid: number): number | null {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8')
    const kib = /^VmRSS:\s+(\d+) kB$/m.exec(status)?.[1]
    return kib ? Number(kib) / 1024 : null
  } catch {
    return null
  }
}

/** Samples every process of `pids` every `everySeconds` until stopped. */
export class MemorySampler {
  readonly samples = new Map<string, MemorySample[]>()
  private timer: NodeJS.Timeout | null = null
  private began = 0

  constructor(private readonly pids: Record<string, number>, private readonly everySeconds: number) {
    for (const name of Object.keys(pids)) this.samples.set(name, [])
  }

  start(): void {
    this.began = performance.now()
    this.sample()
    this.timer = setInterval(() => this.sample(), this.everySeconds * 1000)
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer)
    this.sample()
  }

  private sample(): void {
    const at = (performance.now() - this.began) / 1000
    for (const [name, pid] of Object.entries(this.pids)) {
      const rss = rssMiB(pid)
      if (rss !== null) this.samples.get(name)!.push({ at, rssMiB: rss })
    }
  }
}

/** The slope of the least-squares line through the samples, in MiB per minute. */
export function slopePerMinute(samples: MemorySample[]): number {
  const n = samples.length
  if (n < 2) return 0
  const meanAt = samples.reduce((sum, s) => sum + s.at, 0) / n
  const meanRss = samples.reduce((sum, s) => sum + s.rssMiB, 0) / n
  let covariance = 0
  let variance = 0
  for (const s of samples) {
    covariance += (s.at - meanAt) * (s.rssMiB - meanRss)
    variance += (s.at - meanAt) ** 2
  }
  return variance === 0 ? 0 : covariance / variance * 60
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.floor(sorted.length / 2)]!
}

/**
 * The trend of one process over the window from `warmUpSeconds` to the end. The first
 * half of that window is where caches, pools and V8's heap settle; growth is a slope
 * above `limitMiBPerMinute` over the second half that also shows as a net rise from the
 * start of the window to its end (of at least that rate over the second half). The
 * slope alone misreads a single step, V8 taking a few more MiB of heap once early in
 * the second half and keeping them, as a trend, even when the process ends below where
 * it started. With fewer than `minimumSamples` in the second half, RSS's own noise (a
 * collection frees a few MiB at once) outweighs any slope.
 */
export function memoryTrend(idleMiB: number, samples: MemorySample[], warmUpSeconds: number,
  limitMiBPerMinute: number, minimumSamples = 12): MemoryTrend {
  const measured = samples.filter((s) => s.at >= warmUpSeconds)
  if (measured.length === 0) throw new Error('no memory sample after the warm-up')
  const first = measured[0]!
  const last = measured[measured.length - 1]!
  const middle = (first.at + last.at) / 2
  const secondHalf = measured.filter((s) => s.at >= middle)
  const slope = slopePerMinute(secondHalf)
  // Five samples at each end: one collection more or less does not decide it.
  const netRise = median(measured.slice(-5).map((s) => s.rssMiB)) - median(measured.slice(0, 5).map((s) => s.rssMiB))
  const secondHalfMinutes = (last.at - middle) / 60
  const verdict = secondHalf.length < minimumSamples ? 'inconclusive'
    : slope > limitMiBPerMinute && netRise > limitMiBPerMinute * secondHalfMinutes ? 'grew' : 'flat'
  return {
    idleMiB, startMiB: first.rssMiB, endMiB: last.rssMiB, peakMiB: Math.max(...measured.map((s) => s.rssMiB)),
    slopeMiBPerMinute: slope, netRiseMiB: netRise, samplesInSecondHalf: secondHalf.length, verdict,
  }
}
