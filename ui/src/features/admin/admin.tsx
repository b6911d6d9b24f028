import { useEffect, useState, type FormEvent, type ReactNode } from "react";
import { client, data, type Schemas, type User } from "../../lib/api";
import { Link, useLocation } from "../../lib/router";
import { isAdmin, useSession } from "../../lib/session";
import { CopyButton, ErrorNote, ScrollTable, SignedIn, bytes, useAction, useLoad, when, useTitle } from "../../components/common";

/** The admin screens, one link each. */
export function AdminNav() {
  const here = useLocation().pathname;
  const links: [string, string][] = [
    ["/admin/users", "Users"],
    ["/admin/metrics", "Metrics"],
    ["/admin/quotas", "Quotas"],
    ["/admin/providers", "Sign-in providers"],
    ["/admin/notifications", "Notifications"],
    ["/admin/banner", "Site banner"],
  ];
  return (
    <nav aria-label="Admin" className="subnav">
      {links.map(([href, label]) => (
        <Link key={href} href={href} aria-current={here === href ? "page" : undefined}>
          {label}
        </Link>
      ))}
    </nav>
  );
}

/** How many accounts wait for approval (0 for people who are not admins),
 * read again at every move between screens and when an account changes. */
export function usePendingCount(): number {
  const { user } = useSession();
  const here = useLocation().pathname;
  const [changes, setChanges] = useState(0);
  useEffect(() => {
    const changed = () => setChanges((n) => n + 1);
    window.addEventListener(ACCOUNTS_CHANGED, changed);
    return () => window.removeEventListener(ACCOUNTS_CHANGED, changed);
  }, []);
  const pending = useLoad(
    () =>
      isAdmin(user)
        ? data(client.GET("/admin/users", { params: { query: { status: "pending" } } })).then((users) => users.length)
        : Promise.resolve(0),
    [user?.id, here, changes],
  );
  return pending.value ?? 0;
}

/** Sent on the window when an admin changed an account, so badges count again. */
const ACCOUNTS_CHANGED = "catalog:accounts-changed";

/** The number of accounts waiting for approval, beside a link to them. */
export function PendingBadge({ count }: { count: number }) {
  if (!count) return null;
  return (
    <span className="badge" title={`${count} waiting for approval`}>
      {count}
      <span className="visually-hidden"> waiting for approval</span>
    </span>
  );
}

/** An admin screen: its navigation and heading, and a word for people who are not admins. */
export function AdminScreen({ title, children }: { title: string; children: ReactNode }) {
  useTitle(`Admin: ${title}`);
  const { user } = useSession();
  return (
    <SignedIn>
      <section>
        <AdminNav />
        <h1>{title}</h1>
        {isAdmin(user) ? children : <p>Only administrators see this screen.</p>}
      </section>
    </SignedIn>
  );
}

/** Every account, for admins (nothing for others, who may not list them). */
function useUsers() {
  const { user } = useSession();
  return useLoad(() => (isAdmin(user) ? data(client.GET("/admin/users")) : Promise.resolve([])), [user?.id]);
}

/** A password the account's holder never sees: it meets the service's
 * rules (four kinds of character), and an invitation link replaces it. */
function throwawayPassword(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(24));
  const body = Array.from(bytes, (b) => b.toString(36).padStart(2, "0")).join("");
  return `Aa1!${body}`;
}

type Made = { username: string; url: string; expires_at: string; invitation: boolean };

/** A new account: with a password the admin sets, or invited with a link
 * with which the person chooses their own. */
function NewUser({ onMade }: { onMade: (made: Made | null, username: string) => void }) {
  const [username, setUsername] = useState("");
  const [email, setEmail] = useState("");
  const [role, setRole] = useState<Schemas["Role"]>("viewer");
  const [invite, setInvite] = useState(true);
  const [password, setPassword] = useState("");
  const action = useAction();
  const submit = (e: FormEvent) => {
    e.preventDefault();
    action.run(async () => {
      const user = await data(
        client.POST("/admin/users", {
          body: { username, email: email || undefined, role, password: invite ? throwawayPassword() : password },
        }),
      );
      let made: Made | null = null;
      if (invite) {
        const link = await data(
          client.POST("/admin/users/{user_id}/password-reset", { params: { path: { user_id: user.id } } }),
        );
        made = { username: user.username, ...link, invitation: true };
      }
      onMade(made, user.username);
      setUsername("");
      setEmail("");
      setPassword("");
    });
  };
  return (
    <form className="stack wide card" onSubmit={submit} aria-labelledby="new-user">
      <h2 id="new-user">Add a person</h2>
      <div className="row">
        <label>
          New username
          <input value={username} onChange={(e) => setUsername(e.target.value)} maxLength={150} required />
        </label>
        <label>
          Email (optional)
          <input type="email" value={email} onChange={(e) => setEmail(e.target.value)} maxLength={254} />
        </label>
        <label>
          Role of the new account
          <select value={role} onChange={(e) => setRole(e.target.value as Schemas["Role"])}>
            {ROLES.map((r) => (
              <option key={r} value={r}>
                {r}
              </option>
            ))}
          </select>
        </label>
      </div>
      <fieldset className="row">
        <legend>Their password</legend>
        <label className="inline">
          <input type="radio" name="how" checked={invite} onChange={() => setInvite(true)} />
          Invite: they choose it with a link you send
        </label>
        <label className="inline">
          <input type="radio" name="how" checked={!invite} onChange={() => setInvite(false)} />
          Set it now
        </label>
        {!invite && (
          <label>
            Password of the new account
            <input
              type="password"
              value={password}
              onChange={(e) => setPassword(e.target.value)}
              autoComplete="new-password"
              minLength={12}
              required
            />
          </label>
        )}
      </fieldset>
      {!invite && (
        <p className="hint">At least 12 characters, with three of: lower-case, upper-case, digits, symbols.</p>
      )}
      <ErrorNote error={action.error} />
      <button type="submit" disabled={action.busy}>
        {invite ? "Create and make an invitation link" : "Create the account"}
      </button>
    </form>
  );
}

const ROLES: Schemas["Role"][] = ["viewer", "editor", "admin"];

/** "an admin", "an editor", "a viewer". */
const withArticle = (role: string) => `${/^[aeiou]/.test(role) ? "an" : "a"} ${role}`;
const capitalized = (text: string) => text.charAt(0).toUpperCase() + text.slice(1);

/** What a role lets its holder do, in a sentence. */
const ROLE_MEANS: Record<Schemas["Role"], string> = {
  viewer: "reads what is public or granted to them",
  editor: "also uploads and edits their own datasets and maps",
  admin: "also manages every account, dataset and setting",
};

/** Accounts: add or invite people, approve pending ones, change roles and status. */
export function AdminUsers() {
  const users = useUsers();
  const action = useAction();
  const [said, setSaid] = useState("");
  const [link, setLink] = useState<Made | null>(null);
  const change = (u: User, update: Schemas["UserUpdate"], done: string) =>
    action.run(async () => {
      await data(client.PATCH("/admin/users/{user_id}", { params: { path: { user_id: u.id } }, body: update }));
      setSaid(done);
      window.dispatchEvent(new Event(ACCOUNTS_CHANGED));
      users.reload();
    });
  const changeRole = (u: User, role: Schemas["Role"]) => {
    const was = u.roles[0] ?? "viewer";
    if (role === was) return;
    const question = `Make ${u.username} ${withArticle(role)}? ${capitalized(withArticle(role))} ${ROLE_MEANS[role]}. Their API keys are revoked.`;
    if (!window.confirm(question)) {
      users.reload();
      return;
    }
    change(u, { role }, `${u.username} is now ${withArticle(role)} (was ${was}); their API keys were revoked.`);
  };
  const changeStatus = (u: User, status: Schemas["AccountStatus"]) => {
    if (status !== "active" && !window.confirm(`Make ${u.username} ${status}? They can no longer sign in, and their keys stop working.`)) {
      users.reload();
      return;
    }
    change(u, { status }, `${u.username} is now ${status}.`);
  };
  const makeLink = (u: User) =>
    action.run(async () => {
      const made = await data(client.POST("/admin/users/{user_id}/password-reset", { params: { path: { user_id: u.id } } }));
      setLink({ username: u.username, ...made, invitation: false });
    });
  const pending = users.value?.filter((u) => u.status === "pending").length ?? 0;
  // One's own role and status stay (the API refuses to lock an admin out).
  const me = useSession().user?.id;
  const ownNote = "Your own role and status: another admin can change them";
  return (
    <AdminScreen title="Users">
      <NewUser
        onMade={(made, username) => {
          setLink(made);
          setSaid(made ? "" : `The account ${username} is made; it can sign in now.`);
          users.reload();
        }}
      />
      <ErrorNote error={action.error ?? users.error} />
      {said && <p role="status">{said}</p>}
      {link && (
        <div className="secret" role="status">
          <label>
            {link.invitation ? "Invitation link" : "Password reset link"} for {link.username}
            <input readOnly value={link.url} onFocus={(e) => e.target.select()} />
          </label>
          <CopyButton text={link.url} label={`Copy the link for ${link.username}`} />
          <p>
            Send it to {link.username} yourself: it sets {link.invitation ? "their first" : "a new"} password once, until{" "}
            {when(link.expires_at)}. An older link of theirs stops working.
          </p>
        </div>
      )}
      {pending > 0 && (
        <p className="note">
          {pending === 1 ? "One account waits" : `${pending} accounts wait`} for your approval: Approve is in their Status
          column.
        </p>
      )}
      <ScrollTable label="Users table" columns={["Username", "Email", "Role", "Status", "Created", "Password"]}>
        {users.value?.map((u) => (
          <tr key={u.id} className={u.status === "pending" ? "pending" : undefined}>
            <td>{u.username}</td>
            <td>{u.email ?? ""}</td>
            <td>
              <select
                aria-label={`Role of ${u.username}`}
                disabled={u.id === me}
                title={u.id === me ? ownNote : undefined}
                value={u.roles[0] ?? "viewer"}
                onChange={(e) => changeRole(u, e.target.value as Schemas["Role"])}
              >
                {ROLES.map((r) => (
                  <option key={r} value={r}>
                    {r}
                  </option>
                ))}
              </select>
            </td>
            <td>
              {u.status === "pending" ? (
                <button type="button" onClick={() => changeStatus(u, "active")} aria-label={`Approve ${u.username}`}>
                  Approve
                </button>
              ) : (
                <select
                  aria-label={`Status of ${u.username}`}
                  disabled={u.id === me}
                  title={u.id === me ? ownNote : undefined}
                  value={u.status}
                  onChange={(e) => changeStatus(u, e.target.value as Schemas["AccountStatus"])}
                >
                  <option value="active">active</option>
                  <option value="suspended">suspended</option>
                  <option value="deactivated">deactivated</option>
                </select>
              )}
            </td>
            <td>{when(u.created_at)}</td>
            <td>
              <button type="button" className="link" onClick={() => makeLink(u)} aria-label={`Make a password reset link for ${u.username}`}>
                Reset link
              </button>
            </td>
          </tr>
        ))}
      </ScrollTable>
    </AdminScreen>
  );
}

// Caps are typed in MB (as `bytes` shows sizes) and sent in bytes.
const MB = 1024 * 1024;

/** A cap as people read it: 0 (how the API answers "none") is no limit. */
function capText(cap: number, format: (n: number) => string): string {
  return cap ? format(cap) : "no limit";
}

/** One account's usage and caps, and a form to change the caps. */
function QuotaCard({ user, onSaved }: { user: User; onSaved: () => void }) {
  const usage = user.quota_usage;
  const [storage, setStorage] = useState(usage?.storage_cap ? String(usage.storage_cap / MB) : "");
  const [count, setCount] = useState(usage?.count_cap ? String(usage.count_cap) : "");
  const [saved, setSaved] = useState(false);
  const action = useAction();
  const save = (e: FormEvent) => {
    e.preventDefault();
    setSaved(false);
    action.run(async () => {
      await client.PUT("/admin/users/{user_id}/quota", {
        params: { path: { user_id: user.id } },
        body: {
          storage_bytes: storage ? Math.round(Number(storage) * MB) : null,
          dataset_count: count ? Number(count) : null,
        },
      });
      setSaved(true);
      onSaved();
    });
  };
  return (
    <li className="card">
      <form className="stack wide" onSubmit={save} aria-labelledby={`quota-${user.id}`}>
        <h2 id={`quota-${user.id}`}>{user.username}</h2>
        {usage && (
          <p className="meta">
            <span>
              Storage: {bytes(usage.bytes_used)} of {capText(usage.storage_cap, bytes)}
            </span>
            <span>
              Datasets: {usage.dataset_count} of {capText(usage.count_cap, String)}
            </span>
          </p>
        )}
        <div className="row">
          <label>
            Storage cap of {user.username} (MB)
            <input type="number" min={0} step="any" value={storage} onChange={(e) => setStorage(e.target.value)} />
          </label>
          <label>
            Dataset cap of {user.username}
            <input type="number" min={0} step={1} value={count} onChange={(e) => setCount(e.target.value)} />
          </label>
          <button type="submit" aria-label={`Save quota of ${user.username}`}>
            Save quota
          </button>
        </div>
        <ErrorNote error={action.error} />
        {saved && <p role="status">Quota of {user.username} saved.</p>}
      </form>
    </li>
  );
}

/** Per-account caps on stored bytes and datasets, beside what each account uses. */
export function AdminQuotas() {
  const users = useUsers();
  return (
    <AdminScreen title="Quotas">
      <p>
        An upload, import or connector push that would pass a cap is refused before anything is stored. Leave a cap
        empty, or 0, for no limit.
      </p>
      <ErrorNote error={users.error} />
      <ul className="cards">
        {users.value?.map((u) => <QuotaCard key={u.id} user={u} onSaved={users.reload} />)}
      </ul>
    </AdminScreen>
  );
}

/** The site banner: set by the service's configuration, so shown here, not edited. */
export function AdminBanner() {
  const { config } = useSession();
  const banner = config?.banner;
  const shown = !!banner?.enabled && !!banner.text;
  return (
    <AdminScreen title="Site banner">
      <p>
        The banner is set by the service's configuration, not on this screen: the environment variables{" "}
        <code>BANNER_ENABLED</code>, <code>BANNER_TEXT</code> and <code>BANNER_COLOR</code>, read when the service
        starts. To change it, change them and restart the service.
      </p>
      <dl className="facts">
        <dt>Shown</dt>
        <dd>{shown ? "yes" : banner?.enabled ? "no: BANNER_TEXT is empty" : "no: BANNER_ENABLED is off"}</dd>
        <dt>Text</dt>
        <dd>{banner?.text || "—"}</dd>
        <dt>Colour</dt>
        <dd>
          {banner?.color ? (
            <>
              <span className="swatch" style={{ background: banner.color }} aria-hidden="true" /> {banner.color}
            </>
          ) : (
            "the default"
          )}
        </dd>
      </dl>
    </AdminScreen>
  );
}
