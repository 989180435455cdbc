import { Tiktoken, type TiktokenBPE } from "js-tiktoken/lite";
import {
  readabilityScore as readabilityScoreTool,
  sentenceSplit as sentenceSplitTool,
  spellCheck as spellCheckTool,
  textEntities as textEntitiesTool,
  textKeywords as textKeywordsTool,
  textSentiment as textSentimentTool,
  textSummarizeExtractive as textSummarizeExtractiveTool,
  tokenCount as tokenCountTool,
} from "../../tools/catalogue/language.js";
import { lazy } from "../../lib/lazy-require.js";
import { WorkerError } from "../errors.js";
import { implement } from "./implementation.js";
import { encodeTokens } from "./token-encode.js";

/**
 * Local language tools: wink-nlp with its English model, nspell with the US Hunspell dictionary,
 * js-tiktoken. Their cost grows faster than their input on some texts (one 200 KB word), so they
 * run in the heavy pool's threads (src/workers/heavy), stopped at their deadline without holding
 * up any other tool. Each library is loaded on its first call, so a fresh thread starts at once.
 */
const english = lazy(async () => {
  const [{ default: winkNLP }, { default: model }] = await Promise.all([
    import("wink-nlp"),
    import("wink-eng-lite-web-model"),
  ]);
  return winkNLP(model);
});
/**
 * The longest run of non-space characters the wink-nlp tools read. Its tokenizer's cost grows
 * much faster than a run's length (one run of 16,000 letters took 0.3 s, one of 200,000 ran
 * past the 10 s deadline, so at no cost one caller's calls held the heavy threads); 400 runs of
 * 500 characters, the worst measured, take about 1 s. No word is that long; a URL rarely is.
 */
const MAX_RUN = 500;

/** The text read by wink-nlp, after refusing a run of characters too long to tokenize in time. */
async function readEnglish(text: string) {
  for (const m of text.matchAll(/\S+/g))
    if (m[0].length > MAX_RUN)
      throw new WorkerError(
        422,
        "invalid_input",
        `The text has ${m[0].length} characters without a space at character ${m.index}: this tool reads runs of up to ${MAX_RUN} characters.`,
        "text",
      );
  const nlp = await english();
  return { its: nlp.its, as: nlp.as, doc: nlp.readDoc(text) };
}
const spellerOf = lazy(async () => {
  const [{ default: nspell }, { default: dictionaryEn }] = await Promise.all([
    import("nspell"),
    import("dictionary-en"),
  ]);
  return nspell({ aff: Buffer.from(dictionaryEn.aff), dic: Buffer.from(dictionaryEn.dic) });
});
/**
 * Suggestions are looked for only for words up to this long: their cost grows steeply with a
 * word's length (a 10,000-letter word ran the worker out of memory), and no real word is longer.
 */
const MAX_SUGGESTED_WORD = 40;

const round = (n: number, digits = 3) => Math.round(n * 10 ** digits) / 10 ** digits;

export const textSentiment = implement(textSentimentTool, {
  async run(input) {
    const { its, doc } = await readEnglish(input.text);
    const score = round(doc.out(its.sentiment) as number);
    const texts = doc.sentences().out() as string[];
    const scores = doc.sentences().out(its.sentiment) as unknown as number[];
    return {
      score,
      label:
        score >= 0.05
          ? ("positive" as const)
          : score <= -0.05
            ? ("negative" as const)
            : ("neutral" as const),
      sentences: texts.map((text, i) => ({ text, score: round(scores[i] ?? 0) })),
    };
  },
});

export const textEntities = implement(textEntitiesTool, {
  async run(input) {
    const { its, doc } = await readEnglish(input.text);
    const found: { type: string; value: string; start: number; end: number }[] = [];
    doc.entities().each((e: { out(f?: unknown): unknown }) => {
      const [start, end] = e.out(its.span) as unknown as [number, number];
      found.push({ type: e.out(its.type) as string, value: e.out() as string, start, end });
    });
    return { entities: found };
  },
});

export const textKeywords = implement(textKeywordsTool, {
  async run(input) {
    const { its, as, doc } = await readEnglish(input.text);
    const content = doc
      .tokens()
      .filter(
        (t) =>
          t.out(its.type) === "word" && !t.out(its.stopWordFlag) && (t.out() as string).length > 1,
      );
    const table = content.out(its.lemma as never, as.freqTable) as unknown as [string, number][];
    const total = content.length() || 1;
    return {
      keywords: table.slice(0, input.limit).map(([keyword, count]) => ({
        keyword: keyword.toLowerCase(),
        count,
        score: round(count / total),
      })),
    };
  },
});

export const sentenceSplit = implement(sentenceSplitTool, {
  async run(input) {
    const { its, doc } = await readEnglish(input.text);
    const list = doc.sentences().out() as string[];
    const words = doc
      .tokens()
      .filter((t) => t.out(its.type) === "word" || t.out(its.type) === "number")
      .length();
    return {
      sentences: list,
      sentence_count: list.length,
      word_count: words,
      token_count: doc.tokens().length(),
      paragraph_count: input.text.split(BLANK_LINE).filter((p) => p.trim() !== "").length,
    };
  },
});

/** A line break, then only spaces or tabs up to the next: what separates two paragraphs. */
const BLANK_LINE = /(?:\r\n?|\n)[ \t]*(?:\r\n?|\n)/;

/** Syllables for Flesch-Kincaid, by vowel groups (the usual approximation), at least one a word. */
const syllables = (word: string) =>
  Math.max(
    1,
    (
      word
        .toLowerCase()
        .replace(/e$/, "")
        .match(/[aeiouy]+/g) ?? []
    ).length,
  );

export const readabilityScore = implement(readabilityScoreTool, {
  async run(input) {
    const { its, doc } = await readEnglish(input.text);
    const stats = doc.out(its.readabilityStats) as unknown as {
      fres: number;
      numOfWords: number;
      numOfComplexWords: number;
      numOfSentences: number;
    };
    // With no words there is nothing to score (the library's ease is NaN, which failed the answer: 502).
    if (stats.numOfWords === 0 || !Number.isFinite(stats.fres))
      throw new WorkerError(422, "invalid_input", "The text has no words to score.", "text");
    const words = doc
      .tokens()
      .filter((t) => t.out(its.type) === "word")
      .out() as string[];
    const perWord = words.reduce((n, w) => n + syllables(w), 0) / (words.length || 1);
    const perSentence = stats.numOfWords / (stats.numOfSentences || 1);
    return {
      flesch_reading_ease: stats.fres,
      flesch_kincaid_grade: round(0.39 * perSentence + 11.8 * perWord - 15.59, 1),
      sentences: stats.numOfSentences,
      words: stats.numOfWords,
      complex_words: stats.numOfComplexWords,
      reading_time_seconds: Math.round((stats.numOfWords / 275) * 60),
    };
  },
});

export const spellCheck = implement(spellCheckTool, {
  async run(input) {
    const speller = await spellerOf();
    const ignore = new Set(input.ignore.map((w) => w.toLowerCase()));
    const misspelled: { word: string; offset: number; suggestions: string[] }[] = [];
    let checked = 0;
    for (const m of input.text.matchAll(/\p{L}+(?:['’]\p{L}+)*/gu)) {
      const word = m[0].replace(/’/g, "'");
      checked++;
      if (ignore.has(word.toLowerCase()) || speller.correct(word)) continue;
      misspelled.push({
        word,
        offset: m.index!,
        suggestions:
          input.max_suggestions && word.length <= MAX_SUGGESTED_WORD
            ? speller.suggest(word).slice(0, input.max_suggestions)
            : [],
      });
    }
    return { misspelled, words_checked: checked };
  },
});

const RANKS: Record<string, () => Promise<{ default: TiktokenBPE }>> = {
  o200k_base: () => import("js-tiktoken/ranks/o200k_base"),
  cl100k_base: () => import("js-tiktoken/ranks/cl100k_base"),
  p50k_base: () => import("js-tiktoken/ranks/p50k_base"),
  r50k_base: () => import("js-tiktoken/ranks/r50k_base"),
};
const encoders = new Map<string, Promise<Tiktoken>>();

export const tokenCount = implement(tokenCountTool, {
  async run(input) {
    if (!encoders.has(input.encoding))
      encoders.set(
        input.encoding,
        RANKS[input.encoding]!().then((m) => new Tiktoken(m.default)),
      );
    const encoder = await encoders.get(input.encoding)!;
    const ids = encodeTokens(encoder, input.text);
    return {
      encoding: input.encoding,
      tokens: ids.length,
      characters: [...input.text].length,
      token_ids: input.return_tokens ? ids.slice(0, 10_000) : null,
    };
  },
});

export const textSummarizeExtractive = implement(textSummarizeExtractiveTool, {
  async run(input) {
    const { its, doc } = await readEnglish(input.text);
    const texts = doc.sentences().out() as string[];
    const importance = doc.out(its.sentenceWiseImportance) as unknown as {
      index: number;
      importance: number;
    }[];
    const chosen = [...importance]
      .sort((a, b) => b.importance - a.importance || a.index - b.index)
      .slice(0, input.sentences)
      .sort((a, b) => a.index - b.index)
      .map((s) => ({ index: s.index, text: texts[s.index]!, importance: round(s.importance) }));
    return { summary: chosen.map((s) => s.text).join(" "), sentences: chosen };
  },
});
