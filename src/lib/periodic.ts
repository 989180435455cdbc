/**
 * Runs `tick` every `intervalMs`, never two at once (a slow tick makes the next one wait), and
 * reports a failed tick instead of stopping. `stop()` waits for a running tick to finish.
 */
export function every(
  intervalMs: number,
  tick: () => Promise<void>,
  onError: (err: unknown) => void,
): { stop(): Promise<void> } {
  let running: Promise<void> | null = null;
  let stopped = false;
  const run = () => {
    if (running || stopped) return;
    running = tick()
      .catch(onError)
      .finally(() => (running = null));
  };
  const timer = setInterval(run, intervalMs);
  timer.unref();
  return {
    async stop() {
      stopped = true;
      clearInterval(timer);
      await running;
    },
  };
}
