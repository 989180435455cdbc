import type { Transporter } from "nodemailer";
import type { Logger } from "pino";

export interface Mail {
  to: string;
  subject: string;
  text: string;
}

export interface Mailer {
  send(mail: Mail): Promise<void>;
  close(): void;
}

/** SMTP through nodemailer, or (no SMTP_URL, development only) the log. */
export function createMailer(options: {
  smtpUrl: string | undefined;
  from: string;
  log: Logger;
}): Mailer {
  if (!options.smtpUrl) {
    return {
      async send(mail) {
        options.log.info(
          { mail: { to: mail.to, subject: mail.subject, text: mail.text } },
          "e-mail (development: written to the log, not sent)",
        );
      },
      close() {},
    };
  }
  // nodemailer is loaded with the first e-mail, not at start-up: most processes send none for a while.
  const smtpUrl = options.smtpUrl;
  let transport: Promise<Transporter> | null = null;
  return {
    async send(mail) {
      transport ??= import("nodemailer").then(({ default: nodemailer }) =>
        nodemailer.createTransport(smtpUrl),
      );
      await (await transport).sendMail({ from: options.from, ...mail });
    },
    close: () =>
      void transport?.then(
        (t) => t.close(),
        () => undefined,
      ),
  };
}
