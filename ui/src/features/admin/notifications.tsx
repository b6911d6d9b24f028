import { useState, type FormEvent } from "react";
import { client, data, type Schemas } from "../../lib/api";
import { isAdmin, useSession } from "../../lib/session";
import { AdminScreen } from "./admin";
import { ErrorNote, useAction, useLoad } from "../../components/common";

type Settings = Schemas["NotificationSettings"];
type Security = Schemas["SmtpSecurity"];

const EVENTS: [string, string][] = [
  ["job_failed", "A job failed"],
  ["job_succeeded", "A job succeeded"],
];
const CHANNEL_NAMES: Record<string, string> = { smtp: "Mail", webhook: "Webhook" };

/** The form's fields, from the settings as the API shows them (secrets never come back). */
function formOf(settings: Settings) {
  const smtp = settings.smtp;
  return {
    mail: !!smtp,
    host: smtp?.host ?? "",
    port: String(smtp?.port ?? 587),
    security: (smtp?.security ?? "starttls") as Security,
    username: smtp?.username ?? "",
    password: "",
    from: smtp?.from ?? "",
    to: smtp?.to.join(", ") ?? "",
    webhook: !!settings.webhook,
    url: settings.webhook?.url ?? "",
    secret: "",
    events: settings.events,
  };
}

function ChannelsForm({ initial, onSaved }: { initial: Settings; onSaved: (s: Settings) => void }) {
  const [form, setForm] = useState(() => formOf(initial));
  const [saved, setSaved] = useState(false);
  const action = useAction();
  const text = (name: "host" | "port" | "username" | "password" | "from" | "to" | "url" | "secret") => ({
    value: form[name],
    onChange: (e: { target: { value: string } }) => setForm({ ...form, [name]: e.target.value }),
  });
  const toggleEvent = (event: string, on: boolean) =>
    setForm({ ...form, events: on ? [...form.events, event] : form.events.filter((e) => e !== event) });
  const save = (e: FormEvent) => {
    e.preventDefault();
    setSaved(false);
    action.run(async () => {
      // A password or secret left empty is left out, which keeps the stored one.
      const body: Schemas["NotificationInput"] = {
        smtp: form.mail
          ? {
              host: form.host,
              port: Number(form.port),
              security: form.security,
              username: form.username || null,
              password: form.password || undefined,
              from: form.from,
              to: form.to.split(",").map((t) => t.trim()).filter(Boolean),
            }
          : null,
        webhook: form.webhook ? { url: form.url, secret: form.secret || undefined } : null,
        events: form.events as Schemas["NotificationInput"]["events"],
      };
      const answer = await data(client.PUT("/settings/notifications", { body }));
      setForm(formOf(answer));
      onSaved(answer);
      setSaved(true);
    });
  };
  return (
    <form onSubmit={save} className="stack">
      <fieldset>
        <legend>Mail (SMTP)</legend>
        <label className="inline">
          <input type="checkbox" checked={form.mail} onChange={(e) => setForm({ ...form, mail: e.target.checked })} />
          Send mail
        </label>
        {form.mail && (
          <div className="stack">
            <label>
              SMTP host
              <input {...text("host")} required />
            </label>
            <label>
              SMTP port
              <input type="number" min={1} max={65535} {...text("port")} required />
            </label>
            <label>
              Connection security
              <select value={form.security} onChange={(e) => setForm({ ...form, security: e.target.value as Security })}>
                <option value="starttls">STARTTLS (usually port 587)</option>
                <option value="tls">TLS from the start (usually port 465)</option>
                <option value="none">None (a relay on a trusted network)</option>
              </select>
            </label>
            <label>
              SMTP username
              <input {...text("username")} autoComplete="off" />
            </label>
            <label>
              SMTP password
              <input type="password" {...text("password")} autoComplete="new-password" aria-describedby="password-note" />
            </label>
            <p id="password-note" className="meta">
              {initial.smtp?.password_set ? "A password is stored; leave this empty to keep it." : "No password is stored."}
            </p>
            <label>
              Sender address
              <input type="email" {...text("from")} required />
            </label>
            <label>
              Recipients (separated by commas)
              <input {...text("to")} required />
            </label>
          </div>
        )}
      </fieldset>
      <fieldset>
        <legend>Webhook</legend>
        <label className="inline">
          <input type="checkbox" checked={form.webhook} onChange={(e) => setForm({ ...form, webhook: e.target.checked })} />
          Call a webhook
        </label>
        {form.webhook && (
          <div className="stack">
            <label>
              Webhook URL
              <input type="url" {...text("url")} required />
            </label>
            <label>
              Signing secret
              <input type="password" {...text("secret")} autoComplete="new-password" aria-describedby="secret-note" />
            </label>
            <p id="secret-note" className="meta">
              {initial.webhook?.secret_set
                ? "A signing secret is stored; leave this empty to keep it."
                : "No signing secret is stored: deliveries go unsigned."}
            </p>
          </div>
        )}
      </fieldset>
      <fieldset>
        <legend>Events to send</legend>
        {EVENTS.map(([event, label]) => (
          <label key={event} className="inline">
            <input type="checkbox" checked={form.events.includes(event)} onChange={(e) => toggleEvent(event, e.target.checked)} />
            {label}
          </label>
        ))}
      </fieldset>
      <ErrorNote error={action.error} />
      {saved && <p role="status">Notification settings saved.</p>}
      <button type="submit" disabled={action.busy}>
        Save notification settings
      </button>
    </form>
  );
}

/** A canned notification through every saved channel, and how each fared. */
function SendTest() {
  const [result, setResult] = useState<Schemas["TestResult"] | null>(null);
  const action = useAction();
  const test = () =>
    action.run(async () => {
      setResult(null);
      setResult(await data(client.POST("/settings/notifications/test")));
    });
  return (
    <section aria-labelledby="test">
      <h2 id="test">Test</h2>
      <p>Sends a test notification through the saved channels.</p>
      <button type="button" onClick={test} disabled={action.busy}>
        {action.busy ? "Sending…" : "Send test"}
      </button>
      <ErrorNote error={action.error} />
      <div role="status" aria-label="Test result">
        {result && (
          <>
            <p>
              {result.channels.length === 0
                ? "No channel is saved: nothing was sent."
                : `Sent through ${result.channels.filter((c) => c.ok).length} of ${result.channels.length} channels.`}
            </p>
            <ul>
              {result.channels.map((c) => (
                <li key={c.channel}>
                  {CHANNEL_NAMES[c.channel] ?? c.channel}: {c.ok ? "delivered" : `failed: ${c.error ?? "no reason given"}`}
                </li>
              ))}
            </ul>
          </>
        )}
      </div>
    </section>
  );
}

/** Where the service sends news of jobs: mail and a webhook. */
export function AdminNotifications() {
  const { user } = useSession();
  const settings = useLoad(
    () => (isAdmin(user) ? data(client.GET("/settings/notifications")) : Promise.resolve(null)),
    [user?.id],
  );
  return (
    <AdminScreen title="Notifications">
      <ErrorNote error={settings.error} />
      {settings.value && <ChannelsForm initial={settings.value} onSaved={settings.setValue} />}
      <SendTest />
    </AdminScreen>
  );
}
