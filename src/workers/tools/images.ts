import bwipjs from "bwip-js/node";
import exifr from "exifr";
import sharp, { type Metadata } from "sharp";
import {
  barcodeGenerate as barcodeGenerateTool,
  imageMetadata as imageMetadataTool,
} from "../../tools/catalogue/images.js";
import { WorkerError } from "../errors.js";
import { decodeBase64, MAX_INPUT_PIXELS } from "./files.js";
import { implement } from "./implementation.js";

/**
 * Image tools without pixel decoding. They run in the heavy pool all the same (tools/heavy.ts):
 * a barcode's drawing and an image's XMP text can each hold a thread for a while.
 */

export const barcodeGenerate = implement(barcodeGenerateTool, {
  async run(input) {
    const options = {
      bcid: input.type,
      text: input.text,
      scale: input.scale,
      height: 12,
      includetext: input.include_text,
      textxalign: "center" as const,
    };
    try {
      if (input.format === "svg")
        return {
          format: "svg" as const,
          mime_type: "image/svg+xml",
          encoding: "utf8" as const,
          data: bwipjs.toSVG(options),
        };
      const png = await bwipjs.toBuffer(options);
      return {
        format: "png" as const,
        mime_type: "image/png",
        encoding: "base64" as const,
        data: png.toString("base64"),
      };
    } catch (err) {
      throw new WorkerError(
        422,
        "invalid_input",
        `Cannot encode this text as ${input.type}: ${String((err as Error).message ?? err).replace(/^\w+: /, "")}`,
        "text",
      );
    }
  },
});

/** EXIF values as JSON: dates as ISO 8601, binary blobs left out. */
function plainTags(tags: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(tags)) {
    if (v instanceof Date) out[k] = v.toISOString();
    else if (v instanceof Uint8Array || ArrayBuffer.isView(v)) continue;
    else if (typeof v !== "function") out[k] = v;
  }
  return JSON.parse(JSON.stringify(out)) as Record<string, unknown>;
}

/** The largest XMP packet read: what one JPEG segment can hold (64 KB). */
const MAX_XMP_BYTES = 65_535;

export const imageMetadata = implement(imageMetadataTool, {
  async run(input) {
    const bytes = decodeBase64(input.image, "image");
    let meta: Metadata;
    try {
      meta = await sharp(bytes, { limitInputPixels: MAX_INPUT_PIXELS }).metadata();
    } catch (err) {
      throw new WorkerError(
        422,
        "invalid_input",
        `The image could not be read: ${(err as Error).message}`,
        "image",
      );
    }
    const tags = ((await exifr
      .parse(bytes, {
        tiff: true,
        exif: true,
        gps: true,
        // exifr's XMP reading is quadratic in unclosed tags (700 KB took 27 s, past the tool's
        // deadline; 64 KB ~0.25 s, in a heavy process): a packet larger than a JPEG can carry is not read.
        xmp: (meta.xmp?.length ?? 0) <= MAX_XMP_BYTES,
        iptc: true,
        translateValues: true,
      })
      .catch(() => null)) ?? {}) as Record<string, unknown>;
    const gps =
      typeof tags.latitude === "number" && typeof tags.longitude === "number"
        ? { latitude: tags.latitude, longitude: tags.longitude }
        : null;
    return {
      format: meta.format ?? "unknown",
      width: meta.autoOrient?.width ?? meta.width ?? 0,
      height: meta.autoOrient?.height ?? meta.height ?? 0,
      channels: meta.channels ?? 0,
      space: meta.space ?? null,
      has_alpha: meta.hasAlpha ?? false,
      orientation: meta.orientation ?? null,
      exif: plainTags(tags),
      gps,
    };
  },
});
