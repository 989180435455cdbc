import { promises as dns, type LookupAddress } from "node:dns";
import { isIP } from "node:net";

/**
 * The SSRF guard's DNS: c-ares queries (A and AAAA) with a deadline, not `dns.lookup`. A lookup
 * runs getaddrinfo on one of libuv's four pool threads, which every lookup and file operation in
 * the process shares, for as long as the system resolver waits (no deadline of ours): a few host
 * names whose DNS never answers — named by anyone who may register a webhook, a custom tool or an
 * issuer — stalled every other account's deliveries and registrations. c-ares queries run on the
 * event loop, so a slow name costs only the request that named it, and only `DNS_TIMEOUT_MS`.
 *
 * c-ares reads neither /etc/hosts nor the resolver's search domains: the guard resolves names as
 * the public DNS answers them. IP literals need no query, and `localhost` and `*.localhost` are
 * loopback without asking anyone (RFC 6761) — refused by the guard unless private targets are
 * allowed, as they were when /etc/hosts answered.
 */
export const DNS_TIMEOUT_MS = 5_000;

/** A host's addresses, of one family (4, 6) or both (0); rejects with a `code` as dns.lookup does. */
export type ResolveHost = (host: string, family?: number) => Promise<LookupAddress[]>;

const LOOPBACK: LookupAddress[] = [
  { address: "127.0.0.1", family: 4 },
  { address: "::1", family: 6 },
];

/** An answer that the name has no address (of that family): conclusive, unlike a timeout. */
const NO_ADDRESS = new Set(["ENOTFOUND", "ENODATA"]);

/** dns.lookup's code for a resolver that did not answer usefully (unreachable.ts names it). */
const LOOKUP_FAILED = "EAI_AGAIN";

const failure = (code: string, message: string) => Object.assign(new Error(message), { code });

/** `servers` ("127.0.0.1:5353") replace the system's (/etc/resolv.conf): for tests. */
export function createHostResolver(
  options: { servers?: string[]; timeoutMs?: number } = {},
): ResolveHost {
  const timeoutMs = options.timeoutMs ?? DNS_TIMEOUT_MS;
  // c-ares retries once inside the deadline; the timer below is the deadline itself, whatever
  // c-ares's own backoff makes of these numbers.
  const resolver = new dns.Resolver({ timeout: Math.ceil(timeoutMs / 2), tries: 2 });
  if (options.servers) resolver.setServers(options.servers);

  const query = (host: string, family: 4 | 6): Promise<string[]> =>
    (family === 4 ? resolver.resolve4(host) : resolver.resolve6(host)).catch(
      (err: NodeJS.ErrnoException) => {
        if (err.code && NO_ADDRESS.has(err.code)) return [];
        // Any other failure (SERVFAIL, a refusing server: c-ares says ECONNREFUSED) is the
        // resolver's, worth retrying: reported as dns.lookup did, which callers already read.
        throw failure(LOOKUP_FAILED, `DNS lookup of ${host} failed (${err.code})`);
      },
    );

  const resolve = async (name: string, family: number): Promise<LookupAddress[]> => {
    const families: (4 | 6)[] = family === 4 ? [4] : family === 6 ? [6] : [4, 6];
    // Both families must answer: a partial answer would leave addresses of the name unchecked
    // at registration, and a failure to retry is what the missing half is.
    const answers = await Promise.all(families.map((f) => query(name, f)));
    const addresses = answers.flatMap((list, i) =>
      list.map((address) => ({ address, family: families[i]! })),
    );
    if (addresses.length === 0) throw failure("ENOTFOUND", `${name} has no address`);
    return addresses;
  };

  return (host, family = 0) => {
    const name = host.toLowerCase().replace(/\.$/, "");
    const wanted = (a: LookupAddress) => family === 0 || a.family === family;
    const literal = isIP(name);
    if (literal) return Promise.resolve([{ address: name, family: literal }].filter(wanted));
    if (name === "localhost" || name.endsWith(".localhost"))
      return Promise.resolve(LOOPBACK.filter(wanted));
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () =>
          reject(
            failure(LOOKUP_FAILED, `DNS did not answer for ${name} within ${timeoutMs / 1000} s`),
          ),
        timeoutMs,
      );
    });
    return Promise.race([resolve(name, family), deadline]).finally(() => clearTimeout(timer));
  };
}

/** The process's resolver, on the system's DNS servers. */
export const systemResolveHost: ResolveHost = createHostResolver();
