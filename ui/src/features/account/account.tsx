import { useState, type FormEvent } from "react";
import { client, data, signOutEverywhere, type Schemas } from "../../lib/api";
import { navigate } from "../../lib/router";
import { useSession } from "../../lib/session";
import { CopyButton, ErrorNote, ScrollTable, SignedIn, bytes, useAction, useLoad, when, useTitle } from "../../components/common";

function ChangePassword() {
  const [current, setCurrent] = useState("");
  const [next, setNext] = useState("");
  const [done, setDone] = useState(false);
  const action = useAction();
  const submit = (e: FormEvent) => {
    e.preventDefault();
    setDone(false);
    action.run(async () => {
      await client.POST("/auth/change-password", { body: { current_password: current, new_password: next } });
      setDone(true);
      setCurrent("");
      setNext("");
    });
  };
  return (
    <form onSubmit={submit} className="stack" aria-labelledby="password">
      <h2 id="password">Change password</h2>
      <label>
        Current password
        <input type="password" value={current} onChange={(e) => setCurrent(e.target.value)} autoComplete="current-password" required />
      </label>
      <label>
        New password
        <input type="password" value={next} onChange={(e) => setNext(e.target.value)} autoComplete="new-password" minLength={8} required />
      </label>
      <ErrorNote error={action.error} />
      {done && <p role="status">Password changed. Your API keys were revoked with the old password.</p>}
      <button type="submit">Change password</button>
    </form>
  );
}

/** A key's state as a person reads it. */
function keyState(k: Schemas["KeyInfo"]): string {
  if (k.revoked_at) return `revoked ${when(k.revoked_at)}`;
  if (k.expires_at && new Date(k.expires_at) <= new Date()) return `expired ${when(k.expires_at)}`;
  return k.expires_at ? `expires ${when(k.expires_at)}` : "active, no expiry";
}

/** The end of the day `date` (YYYY-MM-DD, the browser's time zone) as an instant. */
function endOfDay(date: string): string {
  return new Date(`${date}T23:59:59`).toISOString();
}

function ApiKeys() {
  const keys = useLoad(() => data(client.GET("/auth/api-keys")), []);
  const [name, setName] = useState("");
  const [scope, setScope] = useState<"full" | "read_only">("full");
  const [expires, setExpires] = useState("");
  const [created, setCreated] = useState<Schemas["CreatedKey"] | null>(null);
  const [revoked, setRevoked] = useState("");
  const action = useAction();
  const create = (e: FormEvent) => {
    e.preventDefault();
    setRevoked("");
    action.run(async () => {
      const body = { name: name || undefined, scope, expires_at: expires ? endOfDay(expires) : undefined };
      setCreated(await data(client.POST("/auth/api-keys", { body })));
      setName("");
      setExpires("");
      keys.reload();
    });
  };
  const revoke = (k: Schemas["KeyInfo"]) => {
    const called = k.name ? `“${k.name}”` : `${k.key_prefix}…`;
    if (!window.confirm(`Revoke the key ${called}? Scripts and tools that use it stop working at once.`)) return;
    action.run(async () => {
      await client.DELETE("/auth/api-keys/{key_id}", { params: { path: { key_id: k.id } } });
      setRevoked(`The key ${called} is revoked.`);
      if (created?.id === k.id) setCreated(null);
      keys.reload();
    });
  };
  const tomorrow = new Date(Date.now() + 86_400_000).toISOString().slice(0, 10);
  return (
    <section aria-labelledby="keys">
      <h2 id="keys">API keys</h2>
      <p>
        A key lets a script or a desktop tool act as you: send it in the <code>X-Api-Key</code> header. A read-only key
        can read but not change anything.
      </p>
      <form onSubmit={create} className="row">
        <label className="grow">
          Key name
          <input value={name} onChange={(e) => setName(e.target.value)} maxLength={255} />
        </label>
        <label>
          Scope
          <select value={scope} onChange={(e) => setScope(e.target.value as typeof scope)}>
            <option value="full">full</option>
            <option value="read_only">read only</option>
          </select>
        </label>
        <label>
          Expires after (optional)
          <input type="date" min={tomorrow} value={expires} onChange={(e) => setExpires(e.target.value)} />
        </label>
        <button type="submit">Create key</button>
      </form>
      <ErrorNote error={action.error ?? keys.error} />
      {revoked && <p role="status">{revoked}</p>}
      {created && (
        <div className="secret">
          <p>Copy this key now: it is shown only once, and stored only as a fingerprint.</p>
          <p className="row">
            <code aria-label="New API key">{created.key}</code>
            <CopyButton text={created.key} label="Copy the new API key" />
          </p>
        </div>
      )}
      <ScrollTable
        label="API keys table"
        columns={["Name", "Key", "Scope", "Created", "Last used", "State", { hidden: "Actions" }]}
      >
        {(Array.isArray(keys.value) ? keys.value : []).map((k) => (
          <tr key={k.id}>
            <td>{k.name ?? ""}</td>
            <td>
              <code>{k.key_prefix}…</code>
            </td>
            <td>{k.scope === "read_only" ? "read only" : k.scope}</td>
            <td>{when(k.created_at)}</td>
            <td>{k.last_used_at ? when(k.last_used_at) : "never"}</td>
            <td>{keyState(k)}</td>
            <td>
              {!k.revoked_at && (
                <button type="button" onClick={() => revoke(k)} aria-label={`Revoke key ${k.name ?? k.key_prefix}`}>
                  Revoke
                </button>
              )}
            </td>
          </tr>
        ))}
      </ScrollTable>
    </section>
  );
}

/** Ends every sign-in of the account, for a lost or shared device. */
function SignOutEverywhere() {
  const { setUser } = useSession();
  const action = useAction();
  const leave = () =>
    action.run(async () => {
      await signOutEverywhere();
      setUser(null);
      navigate("/signin");
    });
  return (
    <section aria-labelledby="everywhere">
      <h2 id="everywhere">Sign out everywhere</h2>
      <p>
        Ends your sign-in on every device and browser, this one included. API keys keep working; revoke them above.
      </p>
      <button type="button" className="danger" onClick={leave} disabled={action.busy}>
        Sign out everywhere
      </button>
      <ErrorNote error={action.error} />
    </section>
  );
}

export function Account() {
  useTitle("Account");
  const { user } = useSession();
  // Read afresh: usage moves with every upload since sign-in.
  const me = useLoad(() => (user ? data(client.GET("/auth/me")) : Promise.resolve(null)), [user?.id]);
  const usage = me.value?.quota_usage;
  return (
    <SignedIn>
      <section>
        <h1>Account</h1>
        <dl className="facts">
          <dt>Username</dt>
          <dd>{user?.username}</dd>
          <dt>Email</dt>
          <dd>{user?.email ?? "—"}</dd>
          <dt>Role</dt>
          <dd>{user?.roles.join(", ")}</dd>
          {usage && (
            <>
              <dt>Storage used</dt>
              <dd>
                {bytes(usage.bytes_used)}
                {usage.storage_cap ? ` of ${bytes(usage.storage_cap)}` : " (no limit)"}
              </dd>
              <dt>Datasets</dt>
              <dd>
                {usage.dataset_count}
                {usage.count_cap ? ` of ${usage.count_cap}` : " (no limit)"}
              </dd>
            </>
          )}
        </dl>
        <ApiKeys />
        <ChangePassword />
        <SignOutEverywhere />
      </section>
    </SignedIn>
  );
}
