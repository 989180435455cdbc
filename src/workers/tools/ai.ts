import { Ajv2020 } from "ajv/dist/2020.js";
import { withFormats } from "../json-schema.js";
import { aiExtract, aiGenerate, aiSummarize, aiTranslate } from "../../tools/catalogue/ai.js";
import { WorkerError } from "../errors.js";
import { chat, type ChatMessage } from "../providers/openai-compatible.js";
import { implement } from "./implementation.js";

const unavailable = (config: { ai: unknown }) => (config.ai ? null : "no AI provider configured");

export const generate = implement(aiGenerate, {
  unavailable,
  async run(input, { config, timeoutMs }) {
    const messages: ChatMessage[] = input.messages ?? [{ role: "user", content: input.prompt! }];
    return chat(config, { messages, max_tokens: input.max_tokens, temperature: input.temperature }, timeoutMs);
  },
});

export const summarize = implement(aiSummarize, {
  unavailable,
  async run(input, { config, timeoutMs }) {
    const result = await chat(
      config,
      {
        messages: [
          { role: "system", content: `Summarize the user's text in at most ${input.max_words} words. Reply with the summary only.` },
          { role: "user", content: input.text },
        ],
      },
      timeoutMs,
    );
    return { summary: result.text.trim(), model: result.model, usage: result.usage };
  },
});

export const translate = implement(aiTranslate, {
  unavailable,
  async run(input, { config, timeoutMs }) {
    const from = input.source_language ? ` from ${input.source_language}` : "";
    const result = await chat(
      config,
      {
        messages: [
          { role: "system", content: `Translate the user's text${from} into ${input.target_language}. Reply with the translation only.` },
          { role: "user", content: input.text },
        ],
      },
      timeoutMs,
    );
    return { translation: result.text.trim(), target_language: input.target_language, model: result.model, usage: result.usage };
  },
});

export const extract = implement(aiExtract, {
  unavailable,
  async run(input, { config, timeoutMs }) {
    const ajv = withFormats(new Ajv2020({ strict: false, allErrors: true }));
    let validate;
    try {
      validate = ajv.compile(input.schema);
    } catch (err) {
      throw new WorkerError(422, "invalid_input", `The schema is not a valid JSON Schema: ${(err as Error).message}`, "schema");
    }
    const result = await chat(
      config,
      {
        messages: [
          { role: "system", content: `Extract data from the user's text as JSON that satisfies this JSON Schema. Reply with the JSON only.${input.instructions ? `\n${input.instructions}` : ""}\n${JSON.stringify(input.schema)}` },
          { role: "user", content: input.text },
        ],
        response_format: { type: "json_schema", json_schema: { name: "extraction", schema: input.schema } },
      },
      timeoutMs,
    );
    let data: unknown;
    try {
      data = JSON.parse(result.text.replace(/^```(?:json)?\s*|\s*```$/g, ""));
    } catch {
      throw new WorkerError(502, "provider_error", "The AI provider's answer was not JSON.");
    }
    if (!validate(data)) throw new WorkerError(502, "provider_error", `The AI provider's answer did not match the schema: ${ajv.errorsText(validate.errors)}`);
    return { data, model: result.model, usage: result.usage };
  },
});
