import { z } from "zod";
import { MAX_TEXT_CHARS } from "./limits.js";
import { defineTool } from "../definition.js";

/** Language tools that run locally (wink-nlp with its English model, nspell, js-tiktoken): no provider. */
const englishText = (max: number) => z.string().min(1).max(max).describe("An English text.");
const story =
  "Toolgate launched on 3 March 2026 in Lisbon. Agents loved the simple pricing, and the team was thrilled. Support answered every e-mail within an hour. Some users found the docs confusing at first, but the new guide fixed that.";

export const textSentiment = defineTool({
  name: "text-sentiment",
  aliases: ["sentiment"],
  title: "Sentiment",
  description:
    "Score the sentiment of an English text from -1 (negative) to 1 (positive), overall and per sentence (wink-nlp, local). A word (a run without a space) may be up to 500 characters.",
  cost: 1,
  category: "language",
  tags: ["sentiment analysis", "opinion", "positive", "negative", "emotion", "nlp"],
  pool: "heavy",
  timeoutMs: 10_000,
  input: z.strictObject({ text: englishText(200_000) }).meta({ examples: [{ text: story }] }),
  output: z.object({
    score: z.number().describe("Overall sentiment, -1 to 1."),
    label: z
      .enum(["negative", "neutral", "positive"])
      .describe("The score as a word (|score| < 0.05 is neutral)."),
    sentences: z
      .array(
        z.object({
          text: z.string().describe("The sentence."),
          score: z.number().describe("Its sentiment, -1 to 1."),
        }),
      )
      .describe("Each sentence's score."),
  }),
});

export const textEntities = defineTool({
  name: "text-entities",
  aliases: ["entities", "ner"],
  title: "Named entities",
  description:
    "Find dates, times, amounts of money, percentages, numbers, ordinals, durations, e-mails, URLs, hashtags, mentions and emoji in an English text (wink-nlp, local). A word (a run without a space) may be up to 500 characters.",
  cost: 1,
  category: "language",
  tags: ["ner", "named entity recognition", "extract dates", "emails", "urls", "nlp"],
  pool: "heavy",
  timeoutMs: 10_000,
  input: z.strictObject({ text: englishText(200_000) }).meta({
    examples: [
      {
        text: "Pay $25 by 5 December 2026 to billing@toolgate.example, or see https://toolgate.example/pay #invoices",
      },
    ],
  }),
  output: z.object({
    entities: z
      .array(
        z.object({
          type: z
            .string()
            .describe(
              "DATE, TIME, MONEY, PERCENT, CARDINAL, ORDINAL, DURATION, EMAIL, URL, HASHTAG, MENTION, EMOJI…",
            ),
          value: z.string().describe("The text of the entity."),
          start: z.number().int().describe("Index of its first token."),
          end: z.number().int().describe("Index of its last token."),
        }),
      )
      .describe("The entities, in order of appearance."),
  }),
});

export const textKeywords = defineTool({
  name: "text-keywords",
  aliases: ["keywords", "keyphrases"],
  title: "Keywords",
  description:
    "The most important words and noun phrases of an English text, ranked by frequency of their lemma, stop words left out (wink-nlp, local). A word (a run without a space) may be up to 500 characters.",
  cost: 1,
  category: "language",
  tags: ["keyword extraction", "tags", "topics", "key phrases", "seo", "nlp"],
  pool: "heavy",
  timeoutMs: 10_000,
  input: z
    .strictObject({
      text: englishText(200_000),
      limit: z.number().int().min(1).max(100).default(10).describe("How many keywords to return."),
    })
    .meta({
      examples: [
        {
          text: "Payments settle in USDC. The gateway checks each payment, then credits the account. Payments that fail are refunded to the account.",
          limit: 5,
        },
      ],
    }),
  output: z.object({
    keywords: z
      .array(
        z.object({
          keyword: z.string().describe("The word (lemma)."),
          count: z.number().int().describe("How often it occurs."),
          score: z.number().describe("Its share of content words, 0 to 1."),
        }),
      )
      .describe("Most important first."),
  }),
});

export const sentenceSplit = defineTool({
  name: "sentence-split",
  aliases: ["sentences", "tokenize"],
  title: "Split sentences and words",
  description:
    "Split an English text into sentences and count words, tokens and paragraphs; abbreviations and decimals are handled (wink-nlp, local). A word (a run without a space) may be up to 500 characters.",
  cost: 1,
  category: "language",
  tags: ["sentence segmentation", "tokenize", "word count", "chunking", "nlp"],
  pool: "heavy",
  timeoutMs: 10_000,
  input: z.strictObject({ text: englishText(1_000_000) }).meta({
    examples: [{ text: "Dr. Smith paid $3.50 at 9 a.m. on Monday. Then she left! Did it work?" }],
  }),
  output: z.object({
    sentences: z.array(z.string()).describe("The sentences, in order."),
    sentence_count: z.number().int().describe("How many sentences."),
    word_count: z.number().int().describe("How many words (tokens that are words or numbers)."),
    token_count: z.number().int().describe("How many tokens, punctuation included."),
    paragraph_count: z
      .number()
      .int()
      .describe("How many paragraphs: blocks of text between blank lines."),
  }),
});

export const readabilityScore = defineTool({
  name: "readability-score",
  aliases: ["readability"],
  title: "Readability",
  description:
    "Flesch reading ease, Flesch-Kincaid grade, reading time and complex-word counts of an English text (wink-nlp, local). A word (a run without a space) may be up to 500 characters.",
  cost: 1,
  category: "language",
  tags: ["flesch", "reading level", "grade level", "reading time", "plain language"],
  pool: "heavy",
  timeoutMs: 10_000,
  input: z.strictObject({ text: englishText(1_000_000) }).meta({ examples: [{ text: story }] }),
  output: z.object({
    flesch_reading_ease: z.number().describe("0 (very hard) to 100 (very easy)."),
    flesch_kincaid_grade: z.number().describe("US school grade needed to understand the text."),
    sentences: z.number().int().describe("Sentence count."),
    words: z.number().int().describe("Word count."),
    complex_words: z.number().int().describe("Words of three or more syllables."),
    reading_time_seconds: z
      .number()
      .int()
      .describe("Estimated reading time at 275 words a minute."),
  }),
});

export const spellCheck = defineTool({
  name: "spell-check",
  aliases: ["spelling"],
  title: "Spell check",
  description:
    "Find misspelled English words (US Hunspell dictionary, nspell) with suggestions and their positions.",
  cost: 1,
  category: "language",
  tags: ["spelling", "typos", "proofread", "hunspell", "dictionary"],
  pool: "heavy",
  timeoutMs: 15_000,
  input: z
    .strictObject({
      text: englishText(100_000),
      ignore: z
        .array(z.string().max(100))
        .max(1000)
        .default([])
        .describe("Words to accept (names, jargon)."),
      max_suggestions: z
        .number()
        .int()
        .min(0)
        .max(10)
        .default(3)
        .describe("Suggestions per misspelling."),
    })
    .meta({
      examples: [
        { text: "The gatway recieves paymnets and sends reciepts.", ignore: ["Toolgate"] },
      ],
    }),
  output: z.object({
    misspelled: z
      .array(
        z.object({
          word: z.string().describe("The misspelled word."),
          offset: z.number().int().describe("Its character offset in the text."),
          suggestions: z.array(z.string()).describe("Likely corrections, best first."),
        }),
      )
      .describe("Each misspelling, in order."),
    words_checked: z.number().int().describe("How many words were checked."),
  }),
});

export const tokenCount = defineTool({
  name: "token-count",
  aliases: ["tokens", "tiktoken"],
  title: "Count tokens",
  description:
    "Count the tokens of a text for OpenAI tokenisers (o200k_base for GPT-4o and later, cl100k_base for GPT-4 and GPT-3.5), with js-tiktoken.",
  cost: 1,
  category: "language",
  tags: ["tokens", "tokenizer", "context window", "cost estimate", "gpt", "bpe"],
  pool: "heavy",
  timeoutMs: 10_000,
  input: z
    .strictObject({
      text: z.string().max(MAX_TEXT_CHARS).describe("The text to count."),
      encoding: z
        .enum(["o200k_base", "cl100k_base", "p50k_base", "r50k_base"])
        .default("o200k_base")
        .describe("The tokeniser."),
      return_tokens: z
        .boolean()
        .default(false)
        .describe("Also return the token ids (up to 10,000)."),
    })
    .meta({
      examples: [{ text: "Toolgate sells tool calls for credits.", encoding: "o200k_base" }],
    }),
  output: z.object({
    encoding: z.string().describe("The tokeniser used."),
    tokens: z.number().int().describe("How many tokens the text is."),
    characters: z.number().int().describe("How many characters the text is."),
    token_ids: z.array(z.number().int()).nullable().describe("The token ids, when asked for."),
  }),
});

/** A text whose sentences share words: importance is read from that, and `story`'s all score 0. */
const solarPanels =
  "Solar panels turn sunlight into electricity. Most home solar panels last twenty-five years or more. The price of solar panels fell sharply over the last decade. Many households now pair solar panels with a battery to store electricity for the evening. Installers say the weather matters less than people think.";

export const textSummarizeExtractive = defineTool({
  name: "text-summarize-extractive",
  aliases: ["extractive-summary"],
  title: "Extractive summary",
  description:
    "Summarise an English text by picking its most important sentences, in their original order (wink-nlp sentence importance, local, no AI provider). A word (a run without a space) may be up to 500 characters.",
  cost: 1,
  category: "language",
  tags: ["summary", "tldr", "key sentences", "condense", "nlp"],
  pool: "heavy",
  timeoutMs: 10_000,
  input: z
    .strictObject({
      text: englishText(1_000_000),
      sentences: z.number().int().min(1).max(50).default(3).describe("How many sentences to keep."),
    })
    .meta({ examples: [{ text: solarPanels, sentences: 2 }] }),
  output: z.object({
    summary: z.string().describe("The chosen sentences, joined."),
    sentences: z
      .array(
        z.object({
          index: z.number().int().describe("Its position in the text, 0-based."),
          text: z.string().describe("The sentence."),
          importance: z.number().describe("Its importance, 0 to 1."),
        }),
      )
      .describe("The chosen sentences, in text order."),
  }),
});
