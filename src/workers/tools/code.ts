import * as prettier from "prettier";
import { format as formatSql, type SqlLanguage } from "sql-formatter";
import { codeFormat as codeFormatTool } from "../../tools/catalogue/code.js";
import { WorkerError } from "../errors.js";
import { implement } from "./implementation.js";

const PARSERS: Record<string, string> = {
  javascript: "babel",
  typescript: "typescript",
  json: "json",
  css: "css",
  scss: "scss",
  less: "less",
  html: "html",
  vue: "vue",
  markdown: "markdown",
  yaml: "yaml",
  graphql: "graphql",
};

export const codeFormat = implement(codeFormatTool, {
  async run(input) {
    let code: string;
    try {
      code =
        input.language === "sql"
          ? `${formatSql(input.code, { language: input.sql_dialect as SqlLanguage, tabWidth: input.indent })}\n`
          : await prettier.format(input.code, {
              parser: PARSERS[input.language]!,
              tabWidth: input.indent,
              printWidth: input.print_width,
            });
    } catch (err) {
      throw new WorkerError(
        422,
        "invalid_input",
        `The ${input.language} code could not be parsed: ${String((err as Error).message).split("\n")[0]}`,
        "code",
      );
    }
    return { code, changed: code !== input.code };
  },
});
