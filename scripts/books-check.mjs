/** `npm run books:check`: the check is src/books/check-command.ts (launch.mjs: dist/ in production). */
import { launch } from "./launch.mjs";

const { run } = await launch("../src/books/check-command.ts", "../dist/src/books/check-command.js");
await run();
