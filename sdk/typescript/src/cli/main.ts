/**
 * The `toolgate` command line, built on the client library: human output by default, `--json`
 * for scripts, `--help` everywhere, and exit codes that tell failures apart:
 * 0 done · 2 usage error · 3 the API refused (an HTTP error, or the wallet's spending cap) ·
 * 4 the gateway could not be reached (network, timeout) · 5 the output could not be written
 * (bin.ts: a full disk; the command itself may have run, and a call been charged) · 1 anything else.
 */
import { readFile } from "node:fs/promises";
import { privateKeyToAccount } from "viem/accounts";
import {
  MAX_TIMEOUT_MS,
  PROXY_ADVICE,
  checkIdempotencyKey,
  normaliseBaseUrl,
  redactUrl,
} from "../checks.js";
import { DEFAULT_BASE_URL, Toolgate } from "../client.js";
import { ToolgateError } from "../errors.js";
import { ALLOW_ASSET_ADVICE, DEFAULT_MAX_PER_CALL, DEFAULT_MAX_PER_SESSION } from "../spending.js";
import {
  type FieldSchema,
  CALL_OPTIONS,
  FIELD_PREFIX,
  UsageError,
  bigintOption,
  expectArgs,
  fieldFlag,
  fieldTypeLabel,
  inputFromFlags,
  intOption,
  parseArgs,
  stringOption,
  type Parsed,
} from "./args.js";
import { readConfig, type StoredConfig, writeConfig } from "./config-file.js";
import { readSecret } from "./read-secret.js";

export const EXIT = { ok: 0, failure: 1, usage: 2, api: 3, network: 4, output: 5 } as const;

/** sdk/typescript/package.json's "version" (test/sdk/typescript/cli-binaries.test.ts keeps them equal). */
export const VERSION = "0.1.0";

const GLOBAL_HELP = `Options for every command:
  --json                    print JSON (for scripts) instead of text
  --base-url URL            the gateway (default: TOOLGATE_BASE_URL, the login's, or http://localhost:8402)
  --timeout SECONDS         wait at most this long for each attempt's answer (default 60; a read or a
                            call is tried up to 3 times before giving up)
  --help                    this help
The API key comes from TOOLGATE_API_KEY, else from \`toolgate login\` (sent only to the gateway it logged in to).`;

const HELP: Record<string, string> = {
  "": `toolgate — call Toolgate's tools from the command line

Usage: toolgate <command> [options]

Commands:
  login                     store an API key (read from standard input) in your config directory
  tools list                list the catalogue with prices
  tools show NAME           one tool: description, price, input fields (--json: the whole tool, schemas included)
  call NAME                 call a tool (--input JSON, --input @file.json, --FIELD value, --field.FIELD value)
  account                   your account: tier, credits, limits
  usage                     ledger entries, newest first
  keys list|create|rotate|revoke   manage API keys
  webhooks list|test        list webhooks, send a test event
  version                   the CLI's version (also: toolgate --version)

Exit codes: 0 done, 2 usage error, 3 API error, 4 network error, 5 the output could not be
written (the command may have run: a call may have been charged), 1 other.

${GLOBAL_HELP}`,
  login: `Usage: toolgate login [--base-url URL]

Reads an API key from standard input (typed, not shown; or piped: \`toolgate login < key.txt\`), checks it
against the gateway, and stores it with the base URL in the config directory (config.json, mode 0600):
$TOOLGATE_CONFIG_DIR, else %APPDATA%\\toolgate on Windows, else $XDG_CONFIG_HOME/toolgate or ~/.config/toolgate.
A key is never taken as an argument, so it stays out of shell history and process lists.`,
  tools: `Usage: toolgate tools list [--json]
       toolgate tools show NAME [--json]`,
  call: `Usage: toolgate call NAME [--input JSON | --input @file.json] [--FIELD value ...] [--idempotency-key KEY]

A field named like one of this command's options (input, json, base-url, help…) is given as
--field.FIELD value, which always means a tool's field (any field can be given so). A value that
starts with "--" is given as --FIELD=value.

The tool's input is the JSON given with --input, or built from --FIELD flags named after the tool's
input fields (see \`toolgate tools show NAME\`), typed from the schema: a number or boolean field takes
its value as written, a flag given alone (--FIELD) means true for a boolean field, a string field takes
the text as is, and any other field (object, array, or "json": any value) takes JSON, parsed when the
field takes what it parses to, else sent as text where the field takes text (--expression 1+2).

Paying per call with x402 instead of an API key:
  --wallet-key-file PATH    a file holding the wallet's private key (0x…); never pass a key itself
  --max-per-call N          refuse to sign above N USDC atomic units (default ${DEFAULT_MAX_PER_CALL}, i.e. $0.10)
  --max-per-session N       refuse once this run would spend more (default ${DEFAULT_MAX_PER_SESSION})
  --allow-asset NETWORK:ADDRESS   also pay with this token (e.g. a test token: eip155:84532:0x…)

The output is the tool's JSON on standard output; what the call cost, and where its time went,
go to standard error: "(1 credit(s), 97 left; tool 1.2 ms, gateway 0.4 ms)" or "(paid on NETWORK,
transaction 0x…; tool 1.2 ms, payment 40.1 ms, gateway 0.4 ms)", with --json as one JSON line:
{"credits_charged":1,"credits_remaining":97,"tool_ms":1.2,"gateway_ms":0.4} or
{"payment":{"network":…,"transaction":…,…},"tool_ms":…,"payment_ms":…,"gateway_ms":…}.`,
  account: "Usage: toolgate account [--json]",
  usage: "Usage: toolgate usage [--limit N] [--cursor CURSOR] [--json]",
  keys: `Usage: toolgate keys list [--json]
       toolgate keys create [NAME | --name NAME] [--json]
       toolgate keys rotate ID [--grace-seconds N] [--json]     (0 = revoke the old key at once)
       toolgate keys revoke ID [--force] [--json]   (--force: even the account's last active key)
A new key is printed once; store it then.`,
  webhooks: `Usage: toolgate webhooks list [--json]
       toolgate webhooks test [--webhook-id ID] [--json]`,
};

interface Io {
  out: (text: string) => void;
  err: (text: string) => void;
}

const table = (rows: string[][]): string => {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? "").length)));
  return rows
    .map((r) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]!))).join("  "))
    .join("\n");
};

/** The gateway's URL: --base-url, else TOOLGATE_BASE_URL, else the login's; a malformed one is a usage error. */
function baseUrlOf(parsed: Parsed, stored: { base_url?: string }): string | undefined {
  const [from, url] = parsed.options.has("base-url")
    ? ["--base-url", stringOption(parsed, "base-url")]
    : // Empty is unset, as the library reads it.
      process.env.TOOLGATE_BASE_URL
      ? ["TOOLGATE_BASE_URL", process.env.TOOLGATE_BASE_URL]
      : ["the stored login", stored.base_url];
  if (url === undefined) return undefined;
  // The library's rules, so that the CLI takes what the library takes (a URL with a newline pasted
  // after it, trimmed) and refuses what it refuses (a query or fragment: the login's key would be
  // sent outside its gateway); the library's words, without its advice on fetch, which the CLI
  // has none of.
  try {
    return normaliseBaseUrl(url, from);
  } catch (error) {
    if (error instanceof ToolgateError)
      throw new UsageError(error.message.replace(PROXY_ADVICE, "").replace(/\.$/, ""));
    throw error;
  }
}

/** A base URL as one gateway: origin and path, whatever trailing slashes; null when not a URL. */
const gatewayOf = (url: string): string | null =>
  URL.canParse(url) ? `${new URL(url).origin}${new URL(url).pathname.replace(/\/+$/, "")}` : null;

/**
 * What the command learnt while choosing its key, for the error it may end with: the gateway the
 * stored login belongs to, when its key was kept from another one.
 */
interface KeyNotes {
  withheldFor?: string;
  /** The Idempotency-Key a tool call was sent with. */
  idempotencyKey?: string;
}

/**
 * The stored login's key, only for the gateway it was stored for (a login without --base-url is
 * the default gateway's). Sent anywhere else, `--base-url http://localhost:8402` to try a local
 * gateway, or a TOOLGATE_BASE_URL a script or a colleague set, would hand the production key to
 * whatever answers there, in clear over http. npm keeps its tokens per registry for the same
 * reason; TOOLGATE_API_KEY, set by the user for this run, still goes wherever they point it.
 */
function storedKeyFor(
  stored: { api_key?: string; base_url?: string },
  baseUrl: string | undefined,
  notes: KeyNotes,
): string | undefined {
  if (stored.api_key === undefined) return undefined;
  const home = stored.base_url ?? DEFAULT_BASE_URL;
  const target = gatewayOf(baseUrl ?? DEFAULT_BASE_URL);
  if (target !== null && gatewayOf(home) === target) return stored.api_key;
  notes.withheldFor = home;
  return undefined;
}

async function clientFor(
  parsed: Parsed,
  notes: KeyNotes,
  readStored: () => Promise<StoredConfig>,
  options: { wallet?: boolean } = {},
): Promise<Toolgate> {
  const stored = await readStored();
  const baseUrl = baseUrlOf(parsed, stored);
  const walletFile = options.wallet ? stringOption(parsed, "wallet-key-file") : undefined;
  // A wallet's limits given without a wallet would be ignored, and the call paid with the key.
  if (options.wallet && !walletFile)
    for (const name of ["max-per-call", "max-per-session", "allow-asset"])
      if (parsed.options.has(name))
        throw new UsageError(
          `--${name} needs --wallet-key-file: it limits what a wallet pays, and without one the call is paid with the API key`,
        );
  const timeoutMs = timeoutOf(parsed);
  if (!walletFile)
    return new Toolgate({
      // Empty is unset, as the library reads it: not a key that hides the stored login's.
      apiKey: process.env.TOOLGATE_API_KEY || storedKeyFor(stored, baseUrl, notes),
      baseUrl,
      timeoutMs,
    });
  const privateKey = (
    await readFile(walletFile, "utf8").catch(() => {
      throw new UsageError(`cannot read the wallet key file ${walletFile}`);
    })
  ).trim();
  if (!/^0x[0-9a-fA-F]{64}$/.test(privateKey))
    throw new UsageError(
      `${walletFile} does not hold a private key (0x followed by 64 hex digits)`,
    );
  let wallet: ReturnType<typeof privateKeyToAccount>;
  try {
    wallet = privateKeyToAccount(privateKey as `0x${string}`);
  } catch {
    // Out of the curve's range (0, or at least its order): viem's message would print the key.
    throw new UsageError(
      `${walletFile} does not hold a valid private key (it must be above 0 and below the secp256k1 curve order)`,
    );
  }
  const allowed = stringOption(parsed, "allow-asset");
  const asset = allowed ? /^(eip155:\d+):(0x[0-9a-fA-F]{40})$/.exec(allowed) : null;
  if (allowed && !asset) throw new UsageError("--allow-asset must look like eip155:84532:0x…");
  return new Toolgate({
    baseUrl,
    timeoutMs,
    wallet,
    spending: {
      maxPerCall: bigintOption(parsed, "max-per-call"),
      maxPerSession: bigintOption(parsed, "max-per-session"),
      allowedAssets: asset
        ? [{ network: asset[1] as `eip155:${string}`, asset: asset[2]! }]
        : undefined,
    },
  });
}

/** The library's bound on a timeout (setTimeout's), in whole seconds. */
const MAX_TIMEOUT_SECONDS = Math.floor(MAX_TIMEOUT_MS / 1000);

/** --timeout SECONDS as the client's per-attempt timeout in milliseconds; unset, the library's 60 s. */
function timeoutOf(parsed: Parsed): number | undefined {
  const value = stringOption(parsed, "timeout");
  if (value === undefined) return undefined;
  const seconds = /^(\d+\.?\d*|\.\d+)$/.test(value) ? Number(value) : Number.NaN;
  if (!(seconds > 0 && seconds <= MAX_TIMEOUT_SECONDS))
    throw new UsageError(
      `--timeout must be a number of seconds above 0 and at most ${MAX_TIMEOUT_SECONDS} (got "${value}")`,
    );
  return Math.max(1, Math.round(seconds * 1000));
}

const UTF8 = new TextDecoder("utf-8", { fatal: true });

/** An --input @file's text: UTF-8 (a byte-order mark, as Windows Notepad writes, left out), else a usage error. */
async function inputFile(path: string): Promise<string> {
  const bytes = await readFile(path).catch(() => {
    throw new UsageError(`cannot read ${path}`);
  });
  try {
    return UTF8.decode(bytes).replace(/^\uFEFF/, "");
  } catch {
    // Decoded leniently, each bad byte would be sent (and charged) as U+FFFD.
    throw new UsageError(
      `${path} is not UTF-8 text: save it as UTF-8 (its bytes would otherwise reach the tool as U+FFFD)`,
    );
  }
}

async function toolInput(
  parsed: Parsed,
  client: Toolgate,
  name: string,
): Promise<Record<string, unknown>> {
  const given = stringOption(parsed, "input");
  const reserved = new Set(CALL_OPTIONS);
  const flags = new Map([...parsed.options].filter(([k]) => !reserved.has(k)));
  if (given !== undefined) {
    if (flags.size)
      throw new UsageError(
        `give the input either with --input or with field flags, not both (a tool's field named input is --${FIELD_PREFIX}input)`,
      );
    const file = given.startsWith("@") ? given.slice(1) : undefined;
    const text = file !== undefined ? await inputFile(file) : given;
    let input: unknown;
    try {
      input = JSON.parse(text) as unknown;
    } catch (error) {
      // The parser's words say where (a trailing comma, a quote missing).
      throw new UsageError(
        `--input${file !== undefined ? ` (${file})` : ""} is not valid JSON: ${(error as Error).message}`,
      );
    }
    if (!input || typeof input !== "object" || Array.isArray(input))
      throw new UsageError(
        `--input must be a JSON object (got ${input === null ? "null" : Array.isArray(input) ? "an array" : `a ${typeof input}`})`,
      );
    return input as Record<string, unknown>;
  }
  if (!flags.size) return {};
  const tool = await client.tools.get(name);
  return inputFromFlags(flags, tool.input_schema as { properties?: Record<string, FieldSchema> });
}

/**
 * What to do when the gateway asked for a key and none was sent: the gateway's words name its
 * header, not how this command takes a key (nor, for a call, that it can be paid per call).
 */
function noKey(error: ToolgateError, command: string, parsed: Parsed): string | undefined {
  const keyless =
    error.code === "missing_api_key" ||
    (command === "call" &&
      error.code === "payment_required" &&
      !parsed.options.has("wallet-key-file"));
  if (!keyless) return undefined;
  return `no API key was given: run \`toolgate login\` or set TOOLGATE_API_KEY${
    command === "call" ? ", or pay for the call with x402: --wallet-key-file PATH" : ""
  }.`;
}

/**
 * Characters a terminal acts on rather than shows: C0 controls but line feed and tab, DEL, C1
 * controls (ESC [ and CSI move the cursor, clear the screen, set the window title…), and the
 * bidirectional overrides and isolates, which reorder what is shown.
 */
// biome-ignore lint/suspicious/noControlCharactersInRegex: escaping them is the point
const UNSHOWN = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g;
const escaped = (c: string) => {
  const code = c.charCodeAt(0);
  return code < 0x100 ? `\\x${code.toString(16).padStart(2, "0")}` : `\\u${code.toString(16)}`;
};

/** Human output as a terminal shows it: what the gateway sent (a tool's title, an error message) cannot drive the terminal. */
export const visible = (text: string): string => text.replace(UNSHOWN, escaped);

/** JSON's own escapes for what JSON.stringify leaves raw (DEL, C1, bidi controls, U+2028/9): the same JSON value. */
const JSON_UNSHOWN = /[\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;
export const jsonText = (data: unknown, indent?: number): string =>
  (JSON.stringify(data, null, indent) ?? "null").replace(
    JSON_UNSHOWN,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`,
  );

/** A usage error on standard error: with --json, as JSON like an API error (status 0, code usage_error). */
function usageError(error: UsageError, io: Io, json: boolean): number {
  if (json) io.err(jsonText({ error: { status: 0, code: "usage_error", message: error.message } }));
  else
    io.err(
      visible(error.message.startsWith("Usage:") ? error.message : `toolgate: ${error.message}`),
    );
  return EXIT.usage;
}

/** --json given as an option: before any "--", as written (for arguments that did not parse). */
export const jsonAsked = (argv: string[]): boolean => {
  const end = argv.indexOf("--");
  return (end === -1 ? argv : argv.slice(0, end)).includes("--json");
};

/** Bun's fetch adds this to its network errors: advice for a program's author, not for the CLI's user. */
const RUNTIME_HINT =
  /\s*For more information, pass `verbose: true` in the second argument to fetch\(\)\.?/g;

export async function run(argv: string[], io: Io): Promise<number> {
  let parsed: Parsed;
  try {
    // Bytes that are not UTF-8 (a Latin-1 terminal's "café") reach the program already decoded,
    // each as U+FFFD: sent on, the tool would get (and charge for) text other than the one typed.
    const garbled = argv.find((a) => a.includes("\uFFFD"));
    if (garbled !== undefined)
      throw new UsageError(
        `the argument "${garbled}" holds U+FFFD (\uFFFD): it was probably not UTF-8 text (check the terminal's encoding, e.g. LANG=C.UTF-8); to send U+FFFD itself, write it as \\ufffd in --input JSON`,
      );
    parsed = parseArgs(argv);
  } catch (error) {
    // Arguments that did not parse: --json as written before any "--".
    if (error instanceof UsageError) return usageError(error, io, jsonAsked(argv));
    throw error;
  }
  const [command = "", sub, arg] = parsed.positionals;
  const json = parsed.options.has("json");
  const notes: KeyNotes = {};
  // The stored login, read by the command that needs it (once), its warnings on standard error.
  const readStored = () => readConfig((warning) => io.err(warning));
  const print = (human: string, data: unknown) => io.out(json ? jsonText(data, 2) : visible(human));
  try {
    if (command === "version" || (command === "" && parsed.options.has("version"))) {
      expectArgs(parsed, 1, ["version"]);
      print(`toolgate ${VERSION}`, { version: VERSION });
      return EXIT.ok;
    }
    if (
      parsed.options.has("help") ||
      parsed.options.has("h") ||
      command === "help" ||
      command === ""
    ) {
      const topic = command === "help" ? (sub ?? "") : command;
      const help = `${HELP[topic] ?? HELP[""]}${topic ? `\n\n${GLOBAL_HELP}` : ""}`;
      // Help asked for is done; no command at all (`toolgate`, `toolgate --json`) is a usage error,
      // and like every error goes to standard error (JSON with --json), leaving standard output empty.
      const asked = command === "help" || parsed.options.has("help") || parsed.options.has("h");
      if (asked) io.out(help);
      else if (json)
        throw new UsageError("no command given; run `toolgate --help` for the commands");
      else io.err(help);
      return asked ? EXIT.ok : EXIT.usage;
    }
    switch (command) {
      case "login": {
        expectArgs(parsed, 1, []);
        const key = await readSecret("API key (not shown): ");
        if (!key) throw new UsageError("no API key on standard input");
        // No warning about the file's mode here: login writes it 0600.
        const baseUrl = baseUrlOf(parsed, await readConfig(() => {}));
        const account = await new Toolgate({
          apiKey: key,
          baseUrl,
          timeoutMs: timeoutOf(parsed),
        }).account.get();
        const { path, tightened } = await writeConfig({
          api_key: key,
          ...(baseUrl ? { base_url: baseUrl } : {}),
        });
        if (tightened)
          io.err(
            `toolgate: ${tightened} was open to other users; its permissions are now 0700 (yours alone)`,
          );
        print(`Logged in to account ${account.id} (${account.tier}); key stored in ${path}`, {
          account_id: account.id,
          config: path,
        });
        return EXIT.ok;
      }
      case "tools": {
        if (sub === "list") expectArgs(parsed, 2, []);
        else if (sub === "show") expectArgs(parsed, 3, []);
        const client = await clientFor(parsed, notes, readStored);
        if (sub === "list") {
          const tools = await client.tools.list();
          print(
            table([
              ["NAME", "CREDITS", "USD", "AVAILABLE", "TITLE"],
              ...tools.map((t) => [
                t.name,
                String(t.price.credits),
                `$${t.price.usd}`,
                t.available ? "yes" : "no",
                t.title,
              ]),
            ]),
            tools,
          );
          return EXIT.ok;
        }
        if (sub === "show" && arg) {
          const t = await client.tools.get(arg);
          const fields = Object.entries(
            (t.input_schema as { properties?: Record<string, FieldSchema> }).properties ?? {},
          );
          print(
            [
              `${t.name} — ${t.title}`,
              t.description,
              `Price: ${t.price.credits} credit(s), $${t.price.usd}`,
              t.aliases.length ? `Aliases: ${t.aliases.join(", ")}` : "",
              `Available: ${t.available ? "yes" : `no (${t.unavailable_reason ?? "unavailable"})`}`,
              "Input:",
              ...fields.map(
                ([k, v]) =>
                  `  ${fieldFlag(k)} (${fieldTypeLabel(v)})${v.description ? `  ${v.description}` : ""}`,
              ),
            ]
              .filter(Boolean)
              .join("\n"),
            t,
          );
          return EXIT.ok;
        }
        throw new UsageError(HELP.tools!);
      }
      case "call": {
        if (!sub) throw new UsageError(HELP.call!);
        // Its options are the tool's fields too: toolInput checks them against the tool's schema.
        expectArgs(parsed, 2);
        // Checked before any request (toolInput may read the tool's schema): an empty key is
        // refused, never dropped, as the library does.
        const given = stringOption(parsed, "idempotency-key");
        try {
          checkIdempotencyKey(given, "--idempotency-key");
        } catch (error) {
          throw new UsageError((error as Error).message);
        }
        const client = await clientFor(parsed, notes, readStored, { wallet: true });
        const input = await toolInput(parsed, client, sub);
        // Made here (as the library would) so that a call whose answer is lost can say which key
        // it was sent with: re-run with it, the gateway replays the call instead of charging again.
        const idempotencyKey = given ?? crypto.randomUUID();
        notes.idempotencyKey = idempotencyKey;
        const result = await client.tools.callWithDetails(sub, input, { idempotencyKey });
        // Standard output stays the tool's output, in both modes, for a script to parse as is; the
        // cost goes to standard error, as JSON with --json (as errors are), so a paid call's
        // transaction is never lost.
        io.out(jsonText(result.output, 2));
        // Where the call's time went, as the gateway's Server-Timing says (absent parts left out).
        const timing = {
          tool_ms: result.toolMs,
          payment_ms: result.paymentMs,
          gateway_ms: result.gatewayMs,
        };
        const took = Object.entries(timing)
          .filter(([, ms]) => ms !== undefined)
          .map(([part, ms]) => `${part.replace("_ms", "")} ${ms} ms`)
          .join(", ");
        if (json)
          io.err(
            jsonText({
              ...(result.payment
                ? { payment: result.payment }
                : {
                    credits_charged: result.creditsCharged ?? null,
                    credits_remaining: result.creditsRemaining ?? null,
                  }),
              ...timing,
            }),
          );
        else
          io.err(
            visible(
              `(${
                result.payment
                  ? `paid on ${result.payment.network}, transaction ${result.payment.transaction}`
                  : `${result.creditsCharged ?? "?"} credit(s), ${result.creditsRemaining ?? "?"} left`
              }${took ? `; ${took}` : ""})`,
            ),
          );
        return EXIT.ok;
      }
      case "account": {
        expectArgs(parsed, 1, []);
        const a = await (await clientFor(parsed, notes, readStored)).account.get();
        print(
          table([
            ["Account", a.id],
            ["Tier", a.tier],
            ["Credits", String(a.credits)],
            ["Rate limit", `${a.rate_limit_per_minute}/min`],
            ["Features", a.features.join(", ")],
          ]),
          a,
        );
        return EXIT.ok;
      }
      case "usage": {
        expectArgs(parsed, 1, ["limit", "cursor"]);
        const page = await (await clientFor(parsed, notes, readStored)).usage.list({
          limit: intOption(parsed, "limit"),
          cursor: stringOption(parsed, "cursor"),
        });
        print(
          table([
            ["AT", "KIND", "AMOUNT", "BALANCE", "TOOL", "REASON"],
            ...page.data.map((e) => [
              e.at,
              e.kind,
              String(e.amount),
              String(e.balance),
              e.tool ?? "",
              e.reason,
            ]),
          ]) + (page.next_cursor ? `\nmore: --cursor ${page.next_cursor}` : ""),
          page,
        );
        return EXIT.ok;
      }
      case "keys": {
        const options = { create: ["name"], rotate: ["grace-seconds"], revoke: ["force"] };
        if (sub !== undefined && ["list", "create", "rotate", "revoke"].includes(sub))
          expectArgs(parsed, sub === "list" ? 2 : 3, options[sub as keyof typeof options] ?? []);
        const client = await clientFor(parsed, notes, readStored);
        if (sub === "list") {
          const keys = await client.keys.list();
          print(
            table([
              ["ID", "KEY", "STATUS", "NAME"],
              ...keys.data.map((k) => [k.id, `${k.prefix}…${k.last4}`, k.status, k.name ?? ""]),
            ]),
            keys,
          );
        } else if (sub === "create") {
          // The name as an option or, as `keys create ci` reads, the command's argument.
          if (arg !== undefined && parsed.options.has("name"))
            throw new UsageError(
              `give the key's name once: \`keys create ${arg}\` or \`keys create --name ${stringOption(parsed, "name")}\`, not both`,
            );
          const key = await client.keys.create({ name: stringOption(parsed, "name") ?? arg });
          print(`Created key ${key.id}. Store it now; it is not shown again:\n${key.key}`, key);
        } else if (sub === "rotate" && arg) {
          const key = await client.keys.rotate(arg, {
            grace_seconds: intOption(parsed, "grace-seconds"),
          });
          print(
            `New key ${key.id} replaces ${arg}. Store it now; it is not shown again:\n${key.key}`,
            key,
          );
        } else if (sub === "revoke" && arg) {
          const key = await client.keys.revoke(arg, { force: parsed.options.has("force") });
          print(`Revoked ${arg}.`, key);
        } else throw new UsageError(HELP.keys!);
        return EXIT.ok;
      }
      case "webhooks": {
        if (sub === "list" || sub === "test")
          expectArgs(parsed, 2, sub === "test" ? ["webhook-id"] : []);
        const client = await clientFor(parsed, notes, readStored);
        if (sub === "list") {
          const hooks = await client.webhooks.list();
          print(
            hooks.data.length
              ? table([
                  ["ID", "URL", "EVENTS"],
                  ...hooks.data.map((w) => [w.id, w.url, w.events.join(",")]),
                ])
              : "No webhooks.",
            hooks,
          );
        } else if (sub === "test") {
          const sent = await client.webhooks.test({
            webhook_id: stringOption(parsed, "webhook-id"),
          });
          print(
            sent.sent.length
              ? sent.sent.map((s) => `sent ${s.event_id} to ${s.webhook_id}`).join("\n")
              : "No webhook to send to.",
            sent,
          );
        } else throw new UsageError(HELP.webhooks!);
        return EXIT.ok;
      }
      default:
        throw new UsageError(`unknown command "${command}"\n\n${HELP[""]}`);
    }
  } catch (error) {
    if (error instanceof UsageError) return usageError(error, io, json);
    if (error instanceof ToolgateError) {
      // Refused for want of a key while the stored one was kept for its own gateway: say so, or
      // "Send your API key" reads as a lost login.
      const hint =
        notes.withheldFor !== undefined && (error.status === 401 || error.status === 402)
          ? `the stored login is for ${redactUrl(notes.withheldFor)}; its key is sent only there. Run \`toolgate login --base-url URL\` for this gateway, or set TOOLGATE_API_KEY.`
          : noKey(error, command, parsed);
      // A call whose answer was lost may have run and been charged: the way to find out without
      // paying twice is its Idempotency-Key, not "list what exists" (advice for creates).
      const unanswered =
        (error.code === "network_error" || error.code === "timeout") &&
        notes.idempotencyKey !== undefined;
      const retry = unanswered
        ? `re-run the call within 24 h with the same input and --idempotency-key ${notes.idempotencyKey}: if it ran, the gateway answers with its result and does not charge it again.`
        : undefined;
      // The library's advice names its own option; here the token is allowed with a flag.
      let message = error.message
        .replace(
          ALLOW_ASSET_ADVICE,
          "pass --allow-asset NETWORK:ADDRESS (e.g. --allow-asset eip155:84532:0x…)",
        )
        .replace(RUNTIME_HINT, "");
      if (unanswered)
        message = message.replace(/; check \(e\.g\. list what exists\) before retrying\.?$/, ".");
      const hints = [hint, retry].filter((h) => h !== undefined);
      // What the gateway added to its error (e.g. credits_remaining, required_tier).
      const fields = (error.body?.error ?? {}) as Record<string, unknown>;
      const details = Object.fromEntries(
        Object.entries(fields).filter(
          ([k]) => !["type", "code", "message", "param", "request_id"].includes(k),
        ),
      );
      if (json)
        io.err(
          jsonText({
            error: {
              status: error.status,
              code: error.code,
              message,
              param: error.param,
              request_id: error.requestId,
              ...(error.retryAfter !== undefined ? { retry_after: error.retryAfter } : {}),
              ...(Object.keys(details).length ? { details } : {}),
              ...(unanswered ? { idempotency_key: notes.idempotencyKey } : {}),
              ...(hints.length ? { hint: hints.join(" ") } : {}),
            },
          }),
        );
      else
        io.err(
          visible(
            `toolgate: ${error.code}: ${message}${error.param ? ` (${error.param})` : ""}${error.requestId ? ` [${error.requestId}]` : ""}${hints.map((h) => `\ntoolgate: ${h}`).join("")}`,
          ),
        );
      // Refused on this side before any request (an id "..", a key that cannot be a header): a
      // usage error, not the API's.
      if (error.status === 0 && error.code === "invalid_argument") return EXIT.usage;
      return error.code === "network_error" || error.code === "timeout" ? EXIT.network : EXIT.api;
    }
    io.err(visible(`toolgate: ${(error as Error)?.stack ?? error}`));
    return EXIT.failure;
  }
}
