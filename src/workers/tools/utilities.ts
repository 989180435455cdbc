import { createHash } from "node:crypto";
import { Ajv } from "ajv";
import { Ajv2020 } from "ajv/dist/2020.js";
import { validated, withFormats } from "../json-schema.js";
import { createTwoFilesPatch, diffChars, diffLines, diffWords } from "diff";
import { francAll } from "franc-min";
import { DateTime, IANAZone } from "luxon";
import QRCode from "qrcode";
import {
  hash as hashTool,
  jsonSchemaValidate as jsonSchemaValidateTool,
  languageDetect as languageDetectTool,
  qrCode as qrCodeTool,
  regexTest as regexTestTool,
  textDiff as textDiffTool,
  timezoneConvert as timezoneConvertTool,
} from "../../tools/catalogue/utilities.js";
import { WorkerError } from "../errors.js";
import { withTimeLimit } from "../time-limit.js";
import { isoWithExactOffset, offsetMinutes } from "./exact-offset.js";
import { implement } from "./implementation.js";

/** CPU budget for work whose cost the caller controls (patterns, schemas). */
const CPU_LIMIT_MS = 1000;

export const qrCode = implement(qrCodeTool, {
  async run(input) {
    // What the encoder cannot take is the caller's text, said as such (it threw, answered 502).
    if (/\p{Surrogate}/u.test(input.text))
      throw new WorkerError(
        422,
        "invalid_input",
        "The text is not well-formed Unicode (it holds a lone surrogate).",
        "text",
      );
    const options = { errorCorrectionLevel: input.error_correction, width: input.size, margin: 2 };
    try {
      QRCode.create(input.text, { errorCorrectionLevel: input.error_correction });
    } catch (err) {
      throw new WorkerError(
        422,
        "invalid_input",
        `The text does not fit in a QR code at error correction ${input.error_correction}: ${(err as Error).message}`,
        "text",
      );
    }
    if (input.format === "svg") {
      return {
        format: "svg" as const,
        mime_type: "image/svg+xml",
        encoding: "utf8" as const,
        data: await QRCode.toString(input.text, { ...options, type: "svg" }),
      };
    }
    const png = await QRCode.toBuffer(input.text, { ...options, type: "png" });
    return {
      format: "png" as const,
      mime_type: "image/png",
      encoding: "base64" as const,
      data: png.toString("base64"),
    };
  },
});

export const hash = implement(hashTool, {
  async run(input) {
    return {
      algorithm: input.algorithm,
      encoding: input.encoding,
      digest: createHash(input.algorithm).update(input.text, "utf8").digest(input.encoding),
    };
  },
});

/**
 * Ajv with logger: false: its default logger wrote a line to the workers' stderr for each format it
 * skips (any caller's text, line breaks and all), outside the JSON log. An unknown format is still
 * skipped here, as it was: the tool answers what the schema checks.
 */
export const jsonSchemaValidate = implement(jsonSchemaValidateTool, {
  async run(input) {
    const draft07 =
      typeof input.schema === "object" && String(input.schema.$schema ?? "").includes("draft-07");
    const ajv = withFormats(
      draft07
        ? new Ajv({ strict: false, allErrors: true, logger: false })
        : new Ajv2020({ strict: false, allErrors: true, logger: false }),
    );
    return withTimeLimit(CPU_LIMIT_MS, "Validating against this schema", "schema", () => {
      let validate;
      try {
        validate = ajv.compile(input.schema as object);
      } catch (err) {
        throw new WorkerError(
          422,
          "invalid_input",
          `The schema is not a valid JSON Schema: ${(err as Error).message}`,
          "schema",
        );
      }
      const valid = validated(validate, input.data);
      if (valid === "endless")
        throw new WorkerError(
          422,
          "invalid_input",
          "The schema refers to itself without end (a $ref cycle that never reaches a value).",
          "schema",
        );
      const errors = (validate.errors ?? []).map((e) => ({
        path: e.instancePath || "/",
        keyword: e.keyword,
        message: e.message ?? "",
      }));
      return { valid, errors };
    });
  },
});

/**
 * Each of the two diffs (the changes, and the unified patch) may run this long: two long texts
 * that share nothing cost O(N·D), minutes of a heavy-pool thread.
 */
const DIFF_LIMIT_MS = 750;

export const textDiff = implement(textDiffTool, {
  async run(input) {
    const bounded = { timeout: DIFF_LIMIT_MS };
    const parts =
      input.mode === "words"
        ? diffWords(input.old, input.new, bounded)
        : input.mode === "chars"
          ? diffChars(input.old, input.new, bounded)
          : diffLines(input.old, input.new, bounded);
    const unified =
      parts &&
      createTwoFilesPatch("old", "new", input.old, input.new, "", "", { context: 3, ...bounded });
    if (!parts || unified === undefined) {
      throw new WorkerError(
        422,
        "resource_limit",
        `These texts differ too much to compare within ${DIFF_LIMIT_MS} ms; compare smaller parts, or by lines.`,
        "new",
      );
    }
    const changes = parts.map((p) => ({
      type: p.added
        ? ("added" as const)
        : p.removed
          ? ("removed" as const)
          : ("unchanged" as const),
      value: p.value,
    }));
    const count = (type: string) =>
      parts
        .filter((p) => (type === "added" ? p.added : p.removed))
        .reduce((n, p) => n + (p.count ?? 1), 0);
    return { changes, added: count("added"), removed: count("removed"), unified };
  },
});

const MAX_MATCHES = 1000;

/**
 * Where to look after an empty match: one character on, and with the u or v flag one code point
 * on (as String.prototype.matchAll does). One unit on lands inside a surrogate pair, which the
 * next exec moves back to its start: the same empty match again, up to MAX_MATCHES of them.
 */
function pastEmptyMatch(text: string, re: RegExp): number {
  const at = re.lastIndex;
  const byCodePoint = /[uv]/.test(re.flags) && (text.codePointAt(at) ?? 0) > 0xffff;
  return at + (byCodePoint ? 2 : 1);
}

export const regexTest = implement(regexTestTool, {
  async run(input) {
    let re: RegExp;
    try {
      re = new RegExp(input.pattern, input.flags);
    } catch (err) {
      // V8's SyntaxError already reads "Invalid regular expression: /(/g: Unterminated group": said once.
      const reason = (err as Error).message.replace(/^Invalid regular expression: /, "");
      throw new WorkerError(
        422,
        "invalid_input",
        `Invalid regular expression: ${reason}`,
        "pattern",
      );
    }
    const found = withTimeLimit(CPU_LIMIT_MS, "Matching this pattern", "pattern", () => {
      const list: RegExpExecArray[] = [];
      if (!re.global && !re.sticky) {
        const m = re.exec(input.text);
        if (m) list.push(m);
        return list;
      }
      let m: RegExpExecArray | null;
      while (list.length < MAX_MATCHES && (m = re.exec(input.text)) !== null) {
        list.push(m);
        if (m[0] === "") re.lastIndex = pastEmptyMatch(input.text, re);
        if (!re.global) break;
      }
      return list;
    });
    const matches = found.map((m) => ({
      match: m[0],
      index: m.index,
      groups: m.groups
        ? Object.fromEntries(Object.entries(m.groups).map(([k, v]) => [k, v ?? null]))
        : null,
      captures: m.slice(1).map((c) => c ?? null),
    }));
    return { matched: matches.length > 0, matches };
  },
});

function zone(name: string, param: string): string {
  if (!IANAZone.isValidZone(name))
    throw new WorkerError(
      422,
      "invalid_input",
      `Unknown time zone "${name}"; use an IANA name such as Europe/Paris.`,
      param,
    );
  return name;
}

export const timezoneConvert = implement(timezoneConvertTool, {
  async run(input) {
    const from = zone(input.from_zone, "from_zone");
    const to = zone(input.to_zone, "to_zone");
    const parsed = DateTime.fromISO(input.datetime, { zone: from, setZone: true });
    if (!parsed.isValid)
      throw new WorkerError(
        422,
        "invalid_input",
        `Not an ISO 8601 date-time: ${parsed.invalidExplanation ?? input.datetime}`,
        "datetime",
      );
    const converted = parsed.setZone(to);
    // Luxon reads years past JavaScript's date range (±275760) and then cannot write them (null: 502).
    if (!converted.isValid || converted.toISO() === null || parsed.toUTC().toISO() === null)
      throw new WorkerError(
        422,
        "invalid_input",
        "The date-time is outside the range of dates that can be converted.",
        "datetime",
      );
    return {
      input: isoWithExactOffset(parsed),
      output: isoWithExactOffset(converted),
      from_zone: from,
      to_zone: to,
      offset_minutes: offsetMinutes(converted),
      utc: parsed.toUTC().toISO()!,
    };
  },
});

export const languageDetect = implement(languageDetectTool, {
  async run(input) {
    const ranked = francAll(input.text, { minLength: 3 });
    const [best] = ranked;
    if (!best || best[0] === "und") return { language: "und", confidence: 0, alternatives: [] };
    return {
      language: best[0],
      confidence: best[1],
      alternatives: ranked.slice(1, 4).map(([language, score]) => ({ language, score })),
    };
  },
});
