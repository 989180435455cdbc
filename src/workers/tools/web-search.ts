import { webSearch } from "../../tools/catalogue/web-search.js";
import { search } from "../providers/search.js";
import { implement } from "./implementation.js";

export default implement(webSearch, {
  unavailable: (config) => (config.search ? null : "no search provider configured"),
  run: (input, { config, timeoutMs }) => search(config, input.query, input.max_results, timeoutMs),
});
