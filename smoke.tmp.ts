import { loadWorkerConfig } from "./src/workers/config.js";
import { startWorkers } from "./src/workers/main.js";
import { TOOLS } from "./src/tools/catalogue/index.js";
import { z } from "zod";
const w = await startWorkers(loadWorkerConfig({ PORT: "0", LOG_LEVEL: "error" }));
for (const t of TOOLS) {
  const ex = (z.toJSONSchema(t.input, { io: "input" }) as any).examples[0];
  const t0 = Date.now();
  const res = await fetch(`http://127.0.0.1:${w.port}/tools/${t.name}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(ex) });
  const body = await res.text();
  console.log(t.name, res.status, Date.now() - t0, "ms", body.slice(0, res.status === 200 ? 160 : 400).replace(/\n/g, " "));
}
await w.stop();
