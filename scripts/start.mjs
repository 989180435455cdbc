/**
 * `npm start`: with NODE_ENV=production, the compiled build (`npm run build` → dist/), run by plain
 * Node; otherwise the TypeScript sources through tsx, so that `npm ci && npm start` works on a fresh
 * checkout with no build step. Both run in this process (no extra child to forward signals to);
 * `WEB_CONCURRENCY` forks re-run this same file, so they take the same branch.
 */
import { launch } from "./launch.mjs";

const { run } = await launch("../src/main.ts", "../dist/src/main.js");
run();
