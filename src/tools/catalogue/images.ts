import { z } from "zod";
import { MAX_TEXT_CHARS } from "./limits.js";
import { defineTool } from "../definition.js";
import { base64File, fileOutput } from "./common.js";
import { PHOTO_JPEG, QR_PNG, TEXT_PNG } from "./examples.js";

/** Image tools: decoding is bounded by a pixel limit, so a small file that claims to be huge is refused. */
const image = base64File("A PNG, JPEG, WebP, GIF, AVIF or TIFF image", 20_000_000);

export const qrDecode = defineTool({
  name: "qr-decode",
  aliases: ["qr-read", "qr-scan"],
  title: "Read a QR code",
  description: "Find and decode a QR code in an image (jsQR), with its position.",
  cost: 2,
  category: "images",
  tags: ["qr", "scan", "barcode reader", "decode"],
  pool: "heavy",
  timeoutMs: 15_000,
  input: z.strictObject({ image }).meta({ examples: [{ image: QR_PNG }] }),
  output: z.object({
    found: z.boolean().describe("Whether a QR code was found."),
    text: z.string().nullable().describe("The decoded text."),
    corners: z
      .array(
        z.object({
          x: z.number().describe("Pixels from the left."),
          y: z.number().describe("Pixels from the top."),
        }),
      )
      .describe(
        "Top-left, top-right, bottom-right and bottom-left corners of the code, when found.",
      ),
  }),
});

export const barcodeGenerate = defineTool({
  name: "barcode-generate",
  aliases: ["barcode"],
  title: "Generate a barcode",
  description:
    "Render a barcode (Code 128, EAN-13, UPC-A, Code 39, ITF-14, Data Matrix, PDF417, Aztec…) as PNG or SVG (bwip-js).",
  cost: 1,
  category: "images",
  tags: ["barcode", "ean", "upc", "code128", "datamatrix", "pdf417", "label"],
  pool: "heavy",
  timeoutMs: 10_000,
  input: z
    .strictObject({
      type: z
        .enum([
          "code128",
          "ean13",
          "ean8",
          "upca",
          "upce",
          "code39",
          "itf14",
          "datamatrix",
          "pdf417",
          "azteccode",
          "gs1-128",
        ])
        .describe("The symbology."),
      text: z
        .string()
        .min(1)
        .max(2000)
        .describe("What to encode (its rules depend on the symbology)."),
      format: z.enum(["png", "svg"]).default("png").describe("The image format."),
      scale: z.number().int().min(1).max(10).default(3).describe("Pixels per module (PNG)."),
      include_text: z
        .boolean()
        .default(true)
        .describe("Print the human-readable text under linear barcodes."),
    })
    .meta({ examples: [{ type: "ean13", text: "590123412345", format: "png" }] }),
  output: z.object({
    format: z.enum(["png", "svg"]).describe("The image format."),
    mime_type: z.string().describe("The image's media type."),
    encoding: z.enum(["base64", "utf8"]).describe("base64 for PNG, utf8 for SVG."),
    data: z.string().describe("The image."),
  }),
});

export const imageTransform = defineTool({
  name: "image-transform",
  aliases: ["image-resize", "image-convert", "thumbnail"],
  title: "Resize and convert an image",
  description:
    "Resize, crop to fit, rotate, grayscale and convert an image between PNG, JPEG, WebP and AVIF (sharp). Orientation from EXIF is applied.",
  cost: 2,
  category: "images",
  tags: ["resize", "thumbnail", "convert", "compress", "webp", "jpeg", "png", "crop"],
  pool: "heavy",
  timeoutMs: 30_000,
  input: z
    .strictObject({
      image,
      width: z.number().int().min(1).max(8000).optional().describe("Target width in pixels."),
      height: z.number().int().min(1).max(8000).optional().describe("Target height in pixels."),
      fit: z
        .enum(["cover", "contain", "fill", "inside", "outside"])
        .default("inside")
        .describe("How to fit both dimensions (CSS object-fit)."),
      format: z.enum(["png", "jpeg", "webp", "avif"]).default("png").describe("Output format."),
      quality: z
        .number()
        .int()
        .min(1)
        .max(100)
        .default(80)
        .describe("Lossy quality (JPEG, WebP, AVIF)."),
      rotate: z
        .number()
        .int()
        .min(-360)
        .max(360)
        .default(0)
        .describe("Degrees clockwise, after EXIF orientation."),
      grayscale: z.boolean().default(false).describe("Convert to grayscale."),
    })
    .meta({ examples: [{ image: PHOTO_JPEG, width: 32, format: "webp" }] }),
  output: z.object({
    ...fileOutput("image"),
    format: z.string().describe("The output format."),
    width: z.number().int().describe("Output width in pixels."),
    height: z.number().int().describe("Output height in pixels."),
  }),
});

export const imageMetadata = defineTool({
  name: "image-metadata",
  aliases: ["exif", "image-info"],
  title: "Image metadata and EXIF",
  description:
    "Read an image's format, size, colour space, alpha and orientation (sharp), and its EXIF, GPS and XMP tags (exifr).",
  cost: 1,
  category: "images",
  tags: ["exif", "gps", "camera", "dimensions", "metadata", "xmp"],
  // exifr's XMP reading is quadratic in unclosed tags: 64 KB of them held the shared loop ~0.25 s.
  pool: "heavy",
  timeoutMs: 15_000,
  input: z.strictObject({ image }).meta({ examples: [{ image: PHOTO_JPEG }] }),
  output: z.object({
    format: z.string().describe("The detected format (jpeg, png, webp…)."),
    width: z.number().int().describe("Width in pixels."),
    height: z.number().int().describe("Height in pixels."),
    channels: z.number().int().describe("Colour channels."),
    space: z.string().nullable().describe("Colour space."),
    has_alpha: z.boolean().describe("Whether the image has an alpha channel."),
    orientation: z.number().int().nullable().describe("EXIF orientation (1-8)."),
    exif: z
      .record(z.string(), z.unknown())
      .describe("EXIF and XMP tags by name (dates as ISO 8601)."),
    gps: z
      .object({
        latitude: z.number().describe("Degrees north."),
        longitude: z.number().describe("Degrees east."),
      })
      .nullable()
      .describe("Where the photo was taken, if recorded."),
  }),
});

export const svgToPng = defineTool({
  name: "svg-to-png",
  aliases: ["svg-render", "rasterize"],
  title: "SVG to PNG",
  description:
    "Render an SVG document to PNG at a chosen width (resvg). External files and URLs are not loaded.",
  cost: 2,
  category: "images",
  tags: ["svg", "png", "rasterize", "render", "vector", "convert"],
  pool: "heavy",
  timeoutMs: 20_000,
  input: z
    .strictObject({
      svg: z.string().min(1).max(MAX_TEXT_CHARS).describe("The SVG document."),
      width: z
        .number()
        .int()
        .min(1)
        .max(8000)
        .optional()
        .describe(
          "Output width in pixels (height keeps the aspect ratio); the SVG's own size if omitted.",
        ),
      background: z
        .string()
        .max(40)
        .optional()
        .describe("A CSS colour to paint behind transparent areas."),
    })
    .meta({
      examples: [
        {
          svg: "<svg xmlns='http://www.w3.org/2000/svg' width='40' height='40'><circle cx='20' cy='20' r='16' fill='teal'/></svg>",
          width: 80,
        },
      ],
    }),
  output: z.object({
    ...fileOutput("PNG"),
    width: z.number().int().describe("Width in pixels."),
    height: z.number().int().describe("Height in pixels."),
  }),
});

export const chartRender = defineTool({
  name: "chart-render",
  aliases: ["chart", "vega-lite"],
  title: "Render a chart",
  description:
    "Render a chart from data with a Vega-Lite specification, as SVG or PNG of the requested size.",
  cost: 3,
  category: "images",
  tags: ["chart", "graph", "plot", "visualization", "bar", "line", "vega"],
  pool: "heavy",
  timeoutMs: 30_000,
  input: z
    .strictObject({
      spec: z
        .record(z.string(), z.unknown())
        .describe(
          "A Vega-Lite specification with inline data (data.values); remote data URLs are refused.",
        ),
      format: z.enum(["png", "svg"]).default("png").describe("The image format."),
      width: z.number().int().min(20).max(4000).default(600).describe("Image width in pixels."),
      height: z.number().int().min(20).max(4000).default(400).describe("Image height in pixels."),
    })
    .meta({
      examples: [
        {
          spec: {
            data: {
              values: [
                { month: "Jan", calls: 120 },
                { month: "Feb", calls: 180 },
                { month: "Mar", calls: 260 },
              ],
            },
            mark: "bar",
            encoding: {
              x: { field: "month", type: "ordinal", sort: null },
              y: { field: "calls", type: "quantitative" },
            },
          },
          format: "png",
          width: 400,
          height: 300,
        },
      ],
    }),
  output: z.object({
    format: z.enum(["png", "svg"]).describe("The image format."),
    mime_type: z.string().describe("The image's media type."),
    encoding: z.enum(["base64", "utf8"]).describe("base64 for PNG, utf8 for SVG."),
    data: z.string().describe("The image."),
    width: z.number().int().describe("Width in pixels."),
    height: z.number().int().describe("Height in pixels."),
  }),
});

export const ocr = defineTool({
  name: "ocr",
  aliases: ["image-to-text"],
  title: "Read text in an image (OCR)",
  description:
    "Recognise English text in an image (Tesseract, running locally), with the confidence of each word and line.",
  cost: 5,
  category: "images",
  tags: ["ocr", "text recognition", "scan", "tesseract", "read image"],
  pool: "heavy",
  timeoutMs: 60_000,
  input: z.strictObject({ image }).meta({ examples: [{ image: TEXT_PNG }] }),
  output: z.object({
    text: z.string().describe("The recognised text."),
    confidence: z.number().describe("Mean confidence, 0 to 100."),
    lines: z
      .array(
        z.object({
          text: z.string().describe("The line's text."),
          confidence: z.number().describe("Its confidence, 0 to 100."),
        }),
      )
      .describe("Each recognised line."),
  }),
});
