/** The robots.txt of a page's site: where robots-check reads it, and the address it names. */
export const robotsUrlOf = (pageUrl: string): string => new URL("/robots.txt", pageUrl).toString();
