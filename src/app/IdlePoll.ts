/**
 * How often a worker that claims leased work from the store (background responses, batches) asks again when its
 * last round found nothing and it runs nothing. Work queued on this instance wakes it at once, so what is left to find
 * is another instance's whose lease ended: the worker asks ten times less often than when busy, yet at least six times
 * per lease, so a dead instance's work is taken over soon after its lease ends.
 */
export const IDLE_POLL_FACTOR = 10

export const idlePollMillis = (options: { readonly pollMillis: number; readonly leaseMillis: number }): number =>
  Math.max(options.pollMillis, Math.min(options.pollMillis * IDLE_POLL_FACTOR, options.leaseMillis / 6))
