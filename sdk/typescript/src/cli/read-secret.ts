/**
 * Reading a secret (an API key) from standard input. Typed on a terminal, it is not echoed: the
 * terminal is put in raw mode for the prompt, so the key never shows on screen, in a screen
 * recording or in the scrollback. Piped (`toolgate login < key.txt`), the whole input is read.
 */
import { UsageError } from "./args.js";

const ENTER = new Set(["\r", "\n", "\u0004"]); // Return, or Ctrl-D
const CTRL_C = "\u0003";
const ERASE = new Set(["\u007f", "\b"]);

export async function readSecret(prompt: string): Promise<string> {
  const stdin = process.stdin;
  if (!stdin.isTTY) {
    let text = "";
    for await (const chunk of stdin) text += chunk;
    return text.trim();
  }
  process.stderr.write(prompt);
  stdin.setRawMode(true);
  stdin.setEncoding("utf8");
  stdin.resume();
  try {
    return await new Promise<string>((resolve, reject) => {
      let typed = "";
      const onData = (chunk: string) => {
        for (const ch of chunk) {
          if (ENTER.has(ch) || ch === CTRL_C) {
            stdin.off("data", onData);
            // In raw mode Ctrl-C is a character, not SIGINT: it cancels here.
            if (ch === CTRL_C) reject(new UsageError("cancelled"));
            else resolve(typed.trim());
            return;
          }
          if (ERASE.has(ch)) typed = typed.slice(0, -1);
          else if (ch >= " ") typed += ch;
        }
      };
      stdin.on("data", onData);
    });
  } finally {
    stdin.setRawMode(false);
    stdin.pause();
    process.stderr.write("\n");
  }
}
