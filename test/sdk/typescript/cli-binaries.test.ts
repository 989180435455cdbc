import { execFile, spawn } from "node:child_process";
import { mkdir, mkdtemp, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { toHex } from "viem";
import { mnemonicToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ANVIL_MNEMONIC } from "../../../chain-fixtures/chain.js";
import { buildCli } from "../../../scripts/build-cli.js";
import {
  balanceOf as creditsOf,
  fundedAccount,
  startGateway,
  type TestGateway,
} from "../../helpers/gateway.js";
import { runWithClosedStdout } from "../../helpers/processes.js";
import { PAY_TO, balanceOf, startChains } from "../../helpers/x402.js";

/**
 * The `toolgate` binaries that `npm run build:cli` writes: the linux-x64 one run here against a
 * real gateway, the linux-arm64 one under qemu-aarch64, the macOS and Windows ones checked for
 * their executable format by reading their headers.
 */
const exec = promisify(execFile);
let binaries: Record<string, string>;
let gw: TestGateway;
let chains: Awaited<ReturnType<typeof startChains>>;
let configDir: string;
const payer = mnemonicToAccount(ANVIL_MNEMONIC, { addressIndex: 5 });

beforeAll(async () => {
  configDir = await mkdtemp(join(tmpdir(), "toolgate-cli-"));
  binaries = Object.fromEntries(buildCli().map((file) => [file.split("/").pop()!, file]));
  chains = await startChains([payer.address]);
  gw = await startGateway({ env: chains.env });
}, 240_000);
afterAll(async () => {
  await gw?.stop();
  await chains?.stop();
  await rm(configDir, { recursive: true, force: true });
});

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}
async function toolgate(
  argv: string[],
  env: Record<string, string> = {},
  options: { binary?: string; input?: string } = {},
): Promise<Run> {
  const file = binaries[options.binary ?? "toolgate-linux-x64"]!;
  const [cmd, args] =
    options.binary === "toolgate-linux-arm64"
      ? ["qemu-aarch64", ["-L", "/usr/aarch64-linux-gnu", file, ...argv]]
      : [file, argv];
  const child = exec(cmd, args, {
    env: { PATH: process.env.PATH ?? "", TOOLGATE_CONFIG_DIR: configDir, ...env },
    timeout: 120_000,
  });
  if (options.input !== undefined) child.child.stdin!.end(options.input);
  else child.child.stdin!.end();
  return child.then(
    ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
    (e: { code?: number; stdout?: string; stderr?: string }) => ({
      code: e.code ?? -1,
      stdout: e.stdout ?? "",
      stderr: e.stderr ?? "",
    }),
  );
}
const keyed = (key: string) => ({ TOOLGATE_API_KEY: key, TOOLGATE_BASE_URL: gw.url });
const HELLO_SHA256 = "b94d27b9934d3e08a52e52d7da7dabfac484efe37a5380ee9088f7ace2efcde9";

describe("the linux-x64 binary", () => {
  it("lists tools as JSON and calls hash with --input, with a file, and with flags from the schema", async () => {
    const { key } = await fundedAccount(gw.url, 100, "free");
    const list = await toolgate(["tools", "list", "--json"], keyed(key));
    expect(list.code).toBe(0);
    expect(JSON.parse(list.stdout).map((t: { name: string }) => t.name)).toContain("hash");

    const inline = await toolgate(
      ["call", "hash", "--input", '{"text":"hello world"}', "--json"],
      keyed(key),
    );
    expect([inline.code, JSON.parse(inline.stdout).digest]).toEqual([0, HELLO_SHA256]);
    const file = join(configDir, "input.json");
    await writeFile(file, JSON.stringify({ text: "hello world", algorithm: "md5" }));
    const fromFile = await toolgate(["call", "hash", "--input", `@${file}`, "--json"], keyed(key));
    expect(JSON.parse(fromFile.stdout)).toMatchObject({
      algorithm: "md5",
      digest: "5eb63bbbe01eeed093cb22bb8f5acdc3",
    });
    const flags = await toolgate(
      ["call", "hash", "--text", "hello world", "--algorithm", "sha1"],
      keyed(key),
    );
    expect(JSON.parse(flags.stdout).digest).toBe("2aae6c35c94fcfb415dbe95f408b9ce91ee846ed");
    expect(flags.stderr).toMatch(/1 credit\(s\), 97 left; tool [\d.]+ ms, gateway [\d.]+ ms\)/);
  });

  it("refuses a field flag given no value (nothing is charged), unless the field is a boolean", async () => {
    const { key } = await fundedAccount(gw.url, 100, "free");
    // With --json, a usage error is JSON on standard error too, as an API error is.
    for (const [argv, stderr] of [
      [
        ["call", "hash", "--text", "--json"],
        JSON.stringify({
          error: { status: 0, code: "usage_error", message: "--text needs a value" },
        }),
      ],
      [["call", "hash", "--text"], "toolgate: --text needs a value"],
    ] as const) {
      const run = await toolgate([...argv], keyed(key));
      expect([argv.join(" "), run.code, run.stdout, run.stderr.trim()]).toEqual([
        argv.join(" "),
        2,
        "",
        stderr,
      ]);
    }
    expect(await creditsOf(gw.url, key)).toBe(100);
    const bare = await toolgate(
      ["call", "date-parse", "--text", "next Friday at noon", "--forward-date", "--json"],
      keyed(key),
    );
    expect([bare.code, JSON.parse(bare.stdout).dates]).toEqual([0, expect.any(Array)]);
  });

  it("types a number field's flag as any decimal number: 1e3, .5, +2, 5., -2.5E-1", async () => {
    const { key } = await fundedAccount(gw.url, 100, "free");
    const convert = async (value: string) => {
      const run = await toolgate(
        ["call", "unit-convert", "--value", value, "--from", "km", "--to", "m", "--json"],
        keyed(key),
      );
      return [value, run.code, run.code === 0 ? JSON.parse(run.stdout).value : run.stderr];
    };
    for (const [value, number] of [
      ["1e3", 1000],
      [".5", 0.5],
      ["+2", 2],
      ["5.", 5],
      ["-2.5E-1", -0.25],
      ["7", 7],
    ] as const)
      expect(await convert(value)).toEqual([value, 0, number]);
    // Not a decimal number (or not a finite one): refused before anything is sent.
    for (const value of ["0x10", "1e999", "1,5"])
      expect(await convert(value)).toEqual([
        value,
        2,
        expect.stringContaining("--value must be a number"),
      ]);
    expect(await creditsOf(gw.url, key)).toBe(94);
  });

  it("ends quietly when the reader has closed standard output (toolgate tools list | head -1)", async () => {
    const { key } = await fundedAccount(gw.url, 100, "free");
    // Closed before the catalogue comes back, so every write meets a closed pipe.
    expect(
      await runWithClosedStdout(binaries["toolgate-linux-x64"]!, ["tools", "list", "--json"], {
        PATH: process.env.PATH ?? "",
        TOOLGATE_CONFIG_DIR: configDir,
        ...keyed(key),
      }),
    ).toEqual([0, ""]);
  });

  it("prints a human table by default and help for every command", async () => {
    const { key } = await fundedAccount(gw.url, 100, "free");
    const list = await toolgate(["tools", "list"], keyed(key));
    expect(list.stdout).toMatch(/^NAME\s+CREDITS\s+USD\s+AVAILABLE\s+TITLE$/m);
    expect(list.stdout).toMatch(/^hash\s+1\s+\$0\.002\s+yes/m);
    for (const command of [
      [],
      ["tools"],
      ["call"],
      ["login"],
      ["account"],
      ["usage"],
      ["keys"],
      ["webhooks"],
    ]) {
      const help = await toolgate([...command, "--help"]);
      expect([command.join(" "), help.code, help.stdout]).toEqual([
        command.join(" "),
        0,
        expect.stringMatching(/Usage: toolgate/),
      ]);
    }
  });

  it("prints the package's version with --version or version", async () => {
    const { version } = JSON.parse(
      await readFile(new URL("../../../sdk/typescript/package.json", import.meta.url), "utf8"),
    ) as { version: string };
    for (const argv of [["--version"], ["version"]])
      expect([argv[0], await toolgate(argv)]).toEqual([
        argv[0],
        { code: 0, stdout: `toolgate ${version}\n`, stderr: "" },
      ]);
    const json = await toolgate(["--version", "--json"]);
    expect([json.code, JSON.parse(json.stdout)]).toEqual([0, { version }]);
    expect((await toolgate(["--help"])).stdout).toMatch(/^ {2}version\s/m);
  });

  it("exits 2 on a usage error, 3 on an API error, 4 when the gateway cannot be reached", async () => {
    const { key } = await fundedAccount(gw.url, 100, "free");
    const usage = await toolgate(["frobnicate"], keyed(key));
    expect([usage.code, usage.stderr]).toEqual([
      2,
      expect.stringContaining('unknown command "frobnicate"'),
    ]);
    const badFlag = await toolgate(["call", "hash", "--colour", "red"], keyed(key));
    expect([badFlag.code, badFlag.stderr]).toEqual([2, expect.stringContaining("--text")]);
    const api = await toolgate(["call", "hash", "--input", '{"text":5}', "--json"], keyed(key));
    expect(api.code).toBe(3);
    expect(JSON.parse(api.stderr).error).toMatchObject({
      status: 422,
      code: "validation_failed",
      param: "text",
    });
    const network = await toolgate(["account"], {
      TOOLGATE_API_KEY: key,
      TOOLGATE_BASE_URL: "http://127.0.0.1:9",
    });
    expect([network.code, network.stderr]).toEqual([4, expect.stringContaining("network_error")]);
    // No command at all, whatever the options: usage. A malformed gateway URL: usage, no stack trace.
    expect((await toolgate(["--json"])).code).toBe(2);
    const badUrl = await toolgate(["account", "--base-url", "not a url"], {
      TOOLGATE_API_KEY: key,
    });
    expect([badUrl.code, badUrl.stderr.trim()]).toEqual([
      2,
      'toolgate: --base-url must be an http(s) URL such as https://toolgate.example (got "not a url")',
    ]);
    const badEnv = await toolgate(["account"], {
      TOOLGATE_API_KEY: key,
      TOOLGATE_BASE_URL: "ftp://127.0.0.1",
    });
    expect([badEnv.code, badEnv.stderr]).toEqual([
      2,
      expect.stringContaining("TOOLGATE_BASE_URL must be an http(s) URL"),
    ]);
  });

  it("logs in from a terminal without showing the key typed", async () => {
    const { key, accountId } = await fundedAccount(gw.url, 100, "free");
    const dir = await mkdtemp(join(tmpdir(), "toolgate-tty-"));
    try {
      // `script` runs the binary on a pseudo-terminal and copies everything the terminal shows.
      const child = spawn(
        "script",
        ["-qec", `${binaries["toolgate-linux-x64"]} login --base-url ${gw.url}`, "/dev/null"],
        { env: { PATH: process.env.PATH ?? "", SHELL: "/bin/sh", TOOLGATE_CONFIG_DIR: dir } },
      );
      let screen = "";
      child.stdout.on("data", (chunk: Buffer) => (screen += chunk.toString()));
      const exited = new Promise<number | null>((r) => child.on("close", r));
      const deadline = Date.now() + 30_000;
      while (!screen.includes("API key (not shown): ") && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 50));
      child.stdin.write(`${key}\r`);
      expect(await exited).toBe(0);
      child.stdin.end();
      expect(screen).toContain(`Logged in to account ${accountId}`);
      expect(screen).not.toContain(key.slice(8));
      expect(JSON.parse(await readFile(join(dir, "config.json"), "utf8")).api_key).toBe(key);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("logs in from standard input, storing the key 0600, then works without TOOLGATE_API_KEY", async () => {
    const { key, accountId } = await fundedAccount(gw.url, 100, "pro");
    const login = await toolgate(["login", "--base-url", gw.url], {}, { input: `${key}\n` });
    expect([login.code, login.stdout]).toEqual([0, expect.stringContaining(accountId)]);
    const stored = join(configDir, "config.json");
    expect((await stat(stored)).mode & 0o777).toBe(0o600);
    expect(JSON.parse(await readFile(stored, "utf8"))).toEqual({ api_key: key, base_url: gw.url });
    const account = await toolgate(["account", "--json"]);
    expect(JSON.parse(account.stdout)).toMatchObject({ id: accountId, tier: "pro" });
    expect((await toolgate(["usage"])).stdout).toMatch(/^AT\s+KIND\s+AMOUNT/m);
    expect((await toolgate(["webhooks", "list"])).stdout).toContain("No webhooks.");
    expect((await toolgate(["webhooks", "test", "--json"])).stdout).toContain('"sent": []');
  });

  it("says in one line, without a stack trace, that login cannot write its config directory", async () => {
    const { key } = await fundedAccount(gw.url, 100, "free");
    const dir = await mkdtemp(join(tmpdir(), "toolgate-unwritable-"));
    try {
      // A file where a parent directory should be: not writable, even for root.
      await writeFile(join(dir, "file"), "");
      const configFile = join(dir, "file", "toolgate", "config.json");
      const login = await toolgate(
        ["login", "--base-url", gw.url],
        { TOOLGATE_CONFIG_DIR: join(dir, "file", "toolgate") },
        { input: `${key}\n` },
      );
      expect([login.code, login.stdout, login.stderr]).toEqual([
        2,
        "",
        expect.stringMatching(new RegExp(`^toolgate: cannot write ${configFile}: [^\\n]*\\n$`)),
      ]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("stops, naming the file, when the stored config.json cannot be used", async () => {
    const dir = await mkdtemp(join(tmpdir(), "toolgate-bad-config-"));
    const file = join(dir, "config.json");
    try {
      for (const content of ["{bad", '["tg_live_x"]', '{"api_key":5}']) {
        await writeFile(file, content);
        const run = await toolgate(["account"], { TOOLGATE_CONFIG_DIR: dir });
        expect([content, run.code, run.stderr]).toEqual([
          content,
          2,
          `toolgate: ${file} is not a valid config file (a JSON object with api_key and base_url); fix it, or delete it and run \`toolgate login\` again\n`,
        ]);
      }
      await rm(file);
      await mkdir(file); // a directory where the file should be: unreadable
      const unreadable = await toolgate(["account"], { TOOLGATE_CONFIG_DIR: dir });
      expect([unreadable.code, unreadable.stderr]).toEqual([
        2,
        expect.stringMatching(new RegExp(`^toolgate: cannot read ${file}: .*\\n$`)),
      ]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("sends the stored login's key only to the gateway it logged in to, and says so elsewhere", async () => {
    const { key, accountId } = await fundedAccount(gw.url, 100, "pro");
    const dir = await mkdtemp(join(tmpdir(), "toolgate-scoped-"));
    // Another gateway (a local one being tried, or a URL someone else chose): records what it is sent.
    const sent: (string | undefined)[] = [];
    const other = createServer((req, res) => {
      sent.push(req.headers["x-api-key"] as string | undefined);
      res.writeHead(401, { "content-type": "application/json" }).end(
        JSON.stringify({
          error: {
            type: "authentication_error",
            code: "missing_api_key",
            message: "Send your API key in the x-api-key header.",
            request_id: "req_elsewhere",
          },
        }),
      );
    });
    await new Promise<void>((r) => other.listen(0, "127.0.0.1", r));
    const otherUrl = `http://127.0.0.1:${(other.address() as AddressInfo).port}`;
    try {
      const env = { TOOLGATE_CONFIG_DIR: dir };
      const login = await toolgate(["login", "--base-url", gw.url], env, { input: `${key}\n` });
      expect(login.code).toBe(0);

      const flag = await toolgate(["account", "--base-url", otherUrl], env);
      const fromEnv = await toolgate(["account", "--json"], {
        ...env,
        TOOLGATE_BASE_URL: otherUrl,
      });
      expect(sent).toEqual([undefined, undefined]);
      expect([flag.code, flag.stderr]).toEqual([
        3,
        `toolgate: missing_api_key: Send your API key in the x-api-key header. [req_elsewhere]\ntoolgate: the stored login is for ${gw.url}; its key is sent only there. Run \`toolgate login --base-url URL\` for this gateway, or set TOOLGATE_API_KEY.\n`,
      ]);
      expect([fromEnv.code, JSON.parse(fromEnv.stderr).error.hint]).toEqual([
        3,
        expect.stringContaining(`the stored login is for ${gw.url}`),
      ]);

      // The gateway it logged in to, however its URL is written, still gets it.
      const home = await toolgate(["account", "--json", "--base-url", `${gw.url}/`], env);
      expect([home.code, JSON.parse(home.stdout).id]).toEqual([0, accountId]);
      // A key the user gives for this run goes where they point it.
      await toolgate(["account"], {
        ...env,
        TOOLGATE_API_KEY: "tg_live_given",
        TOOLGATE_BASE_URL: otherUrl,
      });
      expect(sent).toEqual([undefined, undefined, "tg_live_given"]);
    } finally {
      other.close();
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("manages keys: create, list, rotate, revoke", async () => {
    const { key, keyId } = await fundedAccount(gw.url, 100, "free");
    const created = JSON.parse(
      (await toolgate(["keys", "create", "--name", "ci", "--json"], keyed(key))).stdout,
    );
    expect(created).toMatchObject({ name: "ci", key: expect.stringMatching(/^tg_live_/) });
    // The name as the command's argument, as `keys create ci` reads (it was dropped: no name).
    const named = await toolgate(["keys", "create", "deploy", "--json"], keyed(key));
    const deploy = JSON.parse(named.stdout);
    expect(deploy).toMatchObject({ name: "deploy" });
    const rotated = JSON.parse(
      (await toolgate(["keys", "rotate", created.id, "--grace-seconds", "0", "--json"], keyed(key)))
        .stdout,
    );
    expect(rotated.replaced.id).toBe(created.id);
    expect((await toolgate(["keys", "revoke", rotated.id], keyed(key))).stdout).toContain(
      `Revoked ${rotated.id}`,
    );
    const list = JSON.parse((await toolgate(["keys", "list", "--json"], keyed(key))).stdout);
    expect(list.data.map((k: { id: string; status: string }) => [k.id, k.status]).sort()).toEqual(
      [
        [keyId, "active"],
        [deploy.id, "active"],
        [created.id, "revoked"],
        [rotated.id, "revoked"],
      ].sort(),
    );
  });

  it("revokes the account's last key only with --force", async () => {
    const { key, keyId } = await fundedAccount(gw.url, 100, "free");
    const kept = await toolgate(["keys", "revoke", keyId], keyed(key));
    expect([kept.code, kept.stderr]).toEqual([3, expect.stringContaining("last_active_key")]);
    expect((await toolgate(["keys", "--help"])).stdout).toContain("revoke ID [--force]");
    const forced = await toolgate(["keys", "revoke", "--force", keyId], keyed(key));
    expect([forced.code, forced.stdout]).toEqual([0, `Revoked ${keyId}.\n`]);
    const after = await toolgate(["account", "--json"], keyed(key));
    expect([after.code, JSON.parse(after.stderr).error.status]).toEqual([3, 401]);
  });

  it("pays a call from --wallet-key-file, and refuses above --max-per-call", async () => {
    const walletFile = join(configDir, "wallet.key");
    await writeFile(walletFile, `${toHex(payer.getHdKey().privateKey!)}\n`, { mode: 0o600 });
    const env = { TOOLGATE_BASE_URL: gw.url };
    const wallet = [
      "--wallet-key-file",
      walletFile,
      "--allow-asset",
      `eip155:84532:${chains.base.usdc}`,
    ];
    const before = await balanceOf(chains.base, PAY_TO);
    const refused = await toolgate(
      ["call", "hash", "--text", "paid", ...wallet, "--max-per-call", "1000"],
      env,
    );
    expect([refused.code, refused.stderr]).toEqual([
      3,
      expect.stringContaining("spend_cap_exceeded"),
    ]);
    const paid = await toolgate(["call", "hash", "--text", "hello world", ...wallet], env);
    expect([paid.code, JSON.parse(paid.stdout).digest, paid.stderr]).toEqual([
      0,
      HELLO_SHA256,
      expect.stringMatching(
        /paid on eip155:84532, transaction 0x[0-9a-f]{64}; tool [\d.]+ ms, payment [\d.]+ ms, gateway [\d.]+ ms\)/,
      ),
    ]);
    // With --json the payment is on standard error too, as one JSON line; the output unchanged.
    const paidJson = await toolgate(
      ["call", "hash", "--text", "hello world", "--json", ...wallet],
      env,
    );
    expect([
      paidJson.code,
      JSON.parse(paidJson.stdout).digest,
      JSON.parse(paidJson.stderr),
    ]).toEqual([
      0,
      HELLO_SHA256,
      {
        payment: expect.objectContaining({
          network: "eip155:84532",
          transaction: expect.stringMatching(/^0x[0-9a-f]{64}$/),
        }),
        // Where its time went (the gateway's Server-Timing): the tool, the payment, the rest.
        tool_ms: expect.any(Number),
        payment_ms: expect.any(Number),
        gateway_ms: expect.any(Number),
      },
    ]);
    expect(await balanceOf(chains.base, PAY_TO)).toBe(before + 4000n);
    // A token it was not told to pay with: the advice names the CLI's flag, not the library's option.
    const unlisted = await toolgate(
      ["call", "hash", "--text", "hello world", "--wallet-key-file", walletFile],
      env,
    );
    expect([unlisted.code, unlisted.stderr]).toEqual([
      3,
      expect.stringContaining("pass --allow-asset NETWORK:ADDRESS"),
    ]);
    expect(unlisted.stderr).not.toContain("spending.allowedAssets");
    expect(await balanceOf(chains.base, PAY_TO)).toBe(before + 4000n);
  });
});

describe("the linux-arm64 binary, under qemu-aarch64", () => {
  it("lists tools as JSON and calls hash", async () => {
    const { key } = await fundedAccount(gw.url, 100, "free");
    const [list, hash] = await Promise.all([
      toolgate(["tools", "list", "--json"], keyed(key), { binary: "toolgate-linux-arm64" }),
      toolgate(["call", "hash", "--input", '{"text":"hello world"}', "--json"], keyed(key), {
        binary: "toolgate-linux-arm64",
      }),
    ]);
    expect([list.code, list.stderr]).toEqual([0, ""]);
    expect(JSON.parse(list.stdout).map((t: { name: string }) => t.name)).toContain("hash");
    expect([hash.code, JSON.parse(hash.stdout).digest]).toEqual([0, HELLO_SHA256]);
    expect(await creditsOf(gw.url, key)).toBe(99);
  }, 120_000);
});

describe("the macOS and Windows binaries", () => {
  const header = async (name: string) => (await readFile(binaries[name]!)).subarray(0, 4096);
  /** Mach-O 64-bit (magic 0xfeedfacf, little-endian) and its CPU type. */
  const machO = (b: Buffer) => ({
    magic: b.readUInt32LE(0),
    cpu: b.readUInt32LE(4),
    fileType: b.readUInt32LE(12),
  });

  it("darwin-arm64 is a Mach-O arm64 executable", async () => {
    expect(machO(await header("toolgate-darwin-arm64"))).toEqual({
      magic: 0xfeedfacf,
      cpu: 0x0100000c,
      fileType: 2,
    });
  });

  it("darwin-x64 is a Mach-O x86_64 executable", async () => {
    expect(machO(await header("toolgate-darwin-x64"))).toEqual({
      magic: 0xfeedfacf,
      cpu: 0x01000007,
      fileType: 2,
    });
  });

  it("windows-x64.exe is a PE32+ x86-64 console executable", async () => {
    const b = await header("toolgate-windows-x64.exe");
    expect(b.toString("latin1", 0, 2)).toBe("MZ");
    const pe = b.readUInt32LE(0x3c);
    expect(b.toString("latin1", pe, pe + 4)).toBe("PE\0\0");
    expect(b.readUInt16LE(pe + 4)).toBe(0x8664); // IMAGE_FILE_MACHINE_AMD64
    expect(b.readUInt16LE(pe + 24)).toBe(0x20b); // PE32+ optional header
    expect(b.readUInt16LE(pe + 24 + 68)).toBe(3); // subsystem: Windows console
  });

  it("the Linux ones are ELF executables for their machines", async () => {
    const machine = async (name: string) => {
      const b = await header(name);
      return [b.toString("latin1", 1, 4), b.readUInt16LE(18)];
    };
    expect(await machine("toolgate-linux-x64")).toEqual(["ELF", 62]); // EM_X86_64
    expect(await machine("toolgate-linux-arm64")).toEqual(["ELF", 183]); // EM_AARCH64
  });
});
