import { unzipSync } from "fflate";
import { WorkerError } from "../errors.js";

/** Decoding and bounding the files callers send inline. */

export function decodeBase64(data: string, param: string): Buffer {
  const bytes = Buffer.from(data, "base64");
  if (bytes.length === 0) throw new WorkerError(422, "invalid_input", "The file is empty.", param);
  return bytes;
}

/** Pixel budget for decoding images: a small file that claims to be huge is refused before decoding. */
export const MAX_INPUT_PIXELS = 40_000_000;

/** Uncompressed budget for ZIP-based documents (.docx, .xlsx). */
export const MAX_UNZIPPED_BYTES = 100_000_000;
const MAX_ZIP_ENTRIES = 10_000;

/**
 * Refuses a ZIP whose entries would inflate past the budget (a zip bomb), reading only the
 * central directory's declared sizes; a lie in those sizes is caught by the heavy pool's memory
 * limit instead.
 */
export function checkZipBudget(bytes: Buffer, param: string, what: string): void {
  let total = 0;
  let entries = 0;
  try {
    unzipSync(bytes, {
      filter(file) {
        total += file.originalSize;
        entries++;
        if (total > MAX_UNZIPPED_BYTES || entries > MAX_ZIP_ENTRIES) throw new ZipTooLarge();
        return false; // sizes only: nothing is inflated here
      },
    });
  } catch (err) {
    if (err instanceof ZipTooLarge) {
      throw new WorkerError(
        422,
        "resource_limit",
        `The ${what} would expand to more than ${MAX_UNZIPPED_BYTES / 1_000_000} MB (or ${MAX_ZIP_ENTRIES} files); it was refused.`,
        param,
      );
    }
    throw new WorkerError(
      422,
      "invalid_input",
      `Not a valid ${what} (it is not a ZIP container).`,
      param,
    );
  }
}

class ZipTooLarge extends Error {}
