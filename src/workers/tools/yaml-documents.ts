import {
  CST,
  Composer,
  type Document,
  isScalar,
  Lexer,
  LineCounter,
  Parser,
  visit,
  type YAMLError,
} from "yaml";
import { MAX_YAML_DEPTH } from "../../tools/catalogue/documents.js";
import { WorkerError } from "../errors.js";

/**
 * Every document of a YAML stream, composed only after its syntax tree was found shallow enough
 * (the syntax tree itself is built without recursion, and given up on once far too deep).
 * Duplicate keys are found with one set per map: the yaml package compares each key with every
 * earlier one, and 70,000 keys took 2 minutes. A document that is not valid YAML is 422 naming
 * `param`. Integers are read as bigints, exactly (yaml-convert decides how JSON carries them).
 */
export function readYamlDocuments(source: string, param: string): Document.Parsed[] {
  const lines = new LineCounter();
  const at = (offset: number) => {
    const { line, col } = lines.linePos(offset);
    return `at line ${line}, column ${col}`;
  };
  const tokens = syntaxTree(source, lines, param);
  const documents = [
    ...new Composer({ uniqueKeys: false, intAsBigInt: true }).compose(shallow(tokens, param)),
  ];
  for (const document of documents) {
    const error: YAMLError | undefined = document.errors[0] ?? duplicateKey(document);
    if (error)
      throw new WorkerError(
        422,
        "invalid_input",
        `Not valid YAML: ${error.message.split("\n")[0]} ${at(error.pos[0])}`,
        param,
      );
  }
  return documents;
}

const tooDeep = (param: string) =>
  new WorkerError(
    422,
    "resource_limit",
    `The YAML nests collections more than ${MAX_YAML_DEPTH} levels deep.`,
    param,
  );

/**
 * Tokens the parser holds open besides collections (the document, a scalar or property being
 * read): the parser is stopped only well past the limit, and `shallow` judges the rest exactly.
 */
const OPEN_BESIDES_COLLECTIONS = 8;

/**
 * The stream's syntax tree, one top-level token at a time, fed lexeme by lexeme (the yaml
 * package's own pattern for a caller's lexer) so it can be given up on as soon as the parser
 * holds more open collections than the limit allows. A document is yielded only once complete:
 * `[[[…` or `- - - …` 333,000 deep built a tree of 190–365 MB before any check could see it,
 * and under load the heavy pool's process ran out of memory (504) instead of answering 422.
 */
function* syntaxTree(source: string, lines: LineCounter, param: string): Generator<CST.Token> {
  const parser = new Parser(lines.addNewLine);
  lines.addNewLine(0);
  for (const lexeme of new Lexer().lex(source)) {
    yield* parser.next(lexeme);
    if (parser.stack.length > MAX_YAML_DEPTH + OPEN_BESIDES_COLLECTIONS) throw tooDeep(param);
  }
  yield* parser.end();
}

/** The stream's tokens, each refused before it is composed if its collections nest too deeply. */
function* shallow(tokens: Iterable<CST.Token>, param: string): Generator<CST.Token> {
  for (const token of tokens) {
    if (nestingOf(token) > MAX_YAML_DEPTH) throw tooDeep(param);
    yield token;
  }
}

/** How many collections nest in a syntax-tree token, counted without recursion (stops past the limit). */
function nestingOf(token: CST.Token): number {
  let deepest = 0;
  const stack: [CST.Token | undefined, number][] = [[token, 0]];
  while (stack.length > 0 && deepest <= MAX_YAML_DEPTH) {
    const [node, depth] = stack.pop()!;
    if (!node) continue;
    if (node.type === "document") stack.push([node.value, depth]);
    else if (CST.isCollection(node)) {
      deepest = Math.max(deepest, depth + 1);
      for (const item of node.items)
        stack.push([item.key ?? undefined, depth + 1], [item.value, depth + 1]);
    }
  }
  return deepest;
}

/** The first key a map repeats (the yaml package's rule: scalars of the same value), as its error. */
function duplicateKey(document: Document.Parsed): YAMLError | undefined {
  let found: YAMLError | undefined;
  visit(document, {
    Map(_, map) {
      const seen = new Set<unknown>();
      for (const { key } of map.items) {
        // NaN is never equal to itself, so two .nan keys are not the same key.
        if (!isScalar(key) || Number.isNaN(key.value)) continue;
        if (seen.has(key.value)) {
          found = {
            name: "YAMLParseError",
            code: "DUPLICATE_KEY",
            message: "Map keys must be unique",
            pos: [key.range?.[0] ?? 0, key.range?.[1] ?? 0],
          } as YAMLError;
          return visit.BREAK;
        }
        seen.add(key.value);
      }
      return undefined;
    },
  });
  return found;
}
