/**
 * Where `toolgate login` keeps the key: `$TOOLGATE_CONFIG_DIR`, else `%APPDATA%\toolgate` on
 * Windows, `$XDG_CONFIG_HOME/toolgate` or `~/.config/toolgate` elsewhere; `config.json` written
 * with 0600 permissions in a 0700 directory.
 */
import { chmod, mkdir, readFile, stat, writeFile } from "node:fs/promises";
import { homedir } from "node:os";
import { join } from "node:path";
import { UsageError } from "./args.js";

export interface StoredConfig {
  api_key?: string;
  base_url?: string;
}

export function configDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env.TOOLGATE_CONFIG_DIR) return env.TOOLGATE_CONFIG_DIR;
  if (process.platform === "win32" && env.APPDATA) return join(env.APPDATA, "toolgate");
  return join(env.XDG_CONFIG_HOME || join(homedir(), ".config"), "toolgate");
}

export const configPath = (env?: NodeJS.ProcessEnv) => join(configDir(env), "config.json");

/**
 * The stored login: none without a file; a usage error naming the file when it cannot be used.
 * A file other users may read or write is still used, with a `warn`ing (as ssh warns about a
 * key file): refusing it would lock the user out over a mode `login` would have set.
 */
export async function readConfig(warn: (message: string) => void): Promise<StoredConfig> {
  const path = configPath();
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (error) {
    // No file, or a file where a parent directory should be: nothing stored (login says why it cannot write).
    if (["ENOENT", "ENOTDIR"].includes((error as NodeJS.ErrnoException).code ?? "")) return {};
    throw new UsageError(`cannot read ${path}: ${(error as Error).message}`);
  }
  let config: unknown;
  try {
    config = JSON.parse(text);
  } catch {
    // not JSON: refused below
  }
  if (
    !config ||
    typeof config !== "object" ||
    Array.isArray(config) ||
    Object.values(config).some((v) => typeof v !== "string")
  )
    throw new UsageError(
      `${path} is not a valid config file (a JSON object with api_key and base_url); fix it, or delete it and run \`toolgate login\` again`,
    );
  const openTo = await modeOpenToOthers(path);
  if (openTo !== undefined)
    warn(
      `toolgate: warning: ${path} (mode ${openTo}) can be read or changed by other users, and it holds your login; run \`chmod 600 ${path}\``,
    );
  return config as StoredConfig;
}

/**
 * The file's permission bits (as `0644`) when its group or other users may read or write it;
 * undefined when they may not, and on Windows, which has no such modes.
 */
async function modeOpenToOthers(path: string): Promise<string | undefined> {
  if (process.platform === "win32") return undefined;
  const mode = (await stat(path)).mode & 0o777;
  return (mode & 0o066) === 0 ? undefined : `0${mode.toString(8).padStart(3, "0")}`;
}

/**
 * Stores the login; a usage error naming the file when it cannot be written. `tightened` names
 * the config directory when it already existed open to other users (mkdir's mode applies only to
 * a directory it creates) and was set to 0700.
 */
export async function writeConfig(
  config: StoredConfig,
): Promise<{ path: string; tightened?: string }> {
  const path = configPath();
  const dir = configDir();
  let tightened: string | undefined;
  try {
    await mkdir(dir, { recursive: true, mode: 0o700 });
    // Windows has no such modes (and %APPDATA% is the user's own).
    if (process.platform !== "win32" && ((await stat(dir)).mode & 0o077) !== 0) {
      await chmod(dir, 0o700);
      tightened = dir;
    }
    await writeFile(path, `${JSON.stringify(config, null, 2)}\n`, { mode: 0o600 });
    await chmod(path, 0o600); // an existing file keeps its old mode on write
  } catch (error) {
    throw new UsageError(`cannot write ${path}: ${(error as Error).message}`);
  }
  return { path, tightened };
}
