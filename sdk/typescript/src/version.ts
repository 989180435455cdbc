/** The library's version: package.json's (a test holds them equal), sent in the User-Agent. */
export const VERSION = "0.1.0";
