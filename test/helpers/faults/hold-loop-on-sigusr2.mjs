// Loaded with `node --import` into a real workers process by the stuck-loop test: SIGUSR2 makes
// its event loop spin for good, as a tool call that never yields would (the ones the catalogue
// probes found are fixed; this stands in for the next one). Plain JavaScript: imported before tsx.
process.on("SIGUSR2", () => {
  for (;;);
});
