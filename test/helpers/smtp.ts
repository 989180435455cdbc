import { SMTPServer } from "smtp-server";

export interface ReceivedMail {
  to: string[];
  raw: string;
}

/** A real SMTP server on loopback that keeps what it receives. */
export async function startSmtpServer(): Promise<{
  url: string;
  mails: ReceivedMail[];
  next(): Promise<ReceivedMail>;
  /** The first message sent to `address`, once it has arrived (tests whose mails may cross). */
  mailTo(address: string): Promise<ReceivedMail>;
  stop(): Promise<void>;
}> {
  const mails: ReceivedMail[] = [];
  const waiters: ((m: ReceivedMail) => void)[] = [];
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ["STARTTLS"],
    logger: false,
    onData(stream, session, callback) {
      let raw = "";
      stream.on("data", (chunk) => (raw += chunk));
      stream.on("end", () => {
        const mail = { to: session.envelope.rcptTo.map((r) => r.address), raw };
        mails.push(mail);
        waiters.shift()?.(mail);
        callback();
      });
    },
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.server.address() as { port: number }).port;
  return {
    url: `smtp://127.0.0.1:${port}`,
    mails,
    next: () =>
      new Promise((resolve) =>
        mails.length > waiters.length ? resolve(mails[waiters.length]!) : waiters.push(resolve),
      ),
    async mailTo(address) {
      const deadline = Date.now() + 10_000;
      for (;;) {
        const mail = mails.find((m) => m.to.includes(address));
        if (mail) return mail;
        if (Date.now() > deadline) throw new Error(`no mail to ${address} within 10 s`);
        await new Promise((r) => setTimeout(r, 25));
      }
    },
    stop: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/** The first link in a received message that `pattern` matches (quoted-printable soft breaks undone). */
function linkIn(raw: string, pattern: RegExp, what: string): string {
  const body = raw.replace(/=\r?\n/g, "").replace(/=3D/g, "=");
  const match = pattern.exec(body);
  if (!match) throw new Error(`no ${what} link in:\n${raw}`);
  return match[0];
}

/** The verification link in a received message. */
export const verificationLink = (raw: string): string =>
  linkIn(raw, /https?:\/\/\S+verify-email\?token=[^\s]+/, "verification");

/** The verification e-mail's link that takes the account back (dashboard/reclaim.ts). */
export const reclaimLink = (raw: string): string =>
  linkIn(raw, /https?:\/\/\S+\/dashboard\/reclaim\?token=\S+/, "take-back");
