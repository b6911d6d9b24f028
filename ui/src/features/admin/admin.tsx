import { useState, type FormEvent, type ReactNode } from "react";
import { client, data, type Schemas, type User } from "../../lib/api";
import { Link, useLocation } from "../../lib/router";
import { isAdmin, useSession } from "../../lib/session";
import { ApiLink } from "../../components/apilink";
import { ErrorNote, ScrollTable, SignedIn, bytes, useAction, useLoad, when, useTitle } from "../../components/common";

/** The admin screens, one link each. */
export function AdminNav() {
  const here = useLocation().pathname;
  const links: [string, string][] = [
    ["/admin/users", "Users"],
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
      <ApiLink path="/api/metrics" open={false}>
        Metrics
      </ApiLink>
    </nav>
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

/** Accounts: approve pending ones, change roles and status. */
export function AdminUsers() {
  const users = useUsers();
  const action = useAction();
  const change = (id: string, update: Schemas["UserUpdate"]) =>
    action.run(async () => {
      await client.PATCH("/admin/users/{user_id}", { params: { path: { user_id: id } }, body: update });
      users.reload();
    });
  const [link, setLink] = useState<{ username: string; url: string; expires_at: string } | null>(null);
  const makeLink = (u: User) =>
    action.run(async () => {
      const made = await data(client.POST("/admin/users/{user_id}/password-reset", { params: { path: { user_id: u.id } } }));
      setLink({ username: u.username, ...made });
    });
  return (
    <AdminScreen title="Users">
      <ErrorNote error={action.error ?? users.error} />
      {link && (
        <div className="secret" role="status">
          <label>
            Password reset link for {link.username}
            <input readOnly value={link.url} onFocus={(e) => e.target.select()} />
          </label>
          <p>
            Send it to {link.username} yourself: it sets a new password once, until {when(link.expires_at)}. An older link of
            theirs stops working.
          </p>
        </div>
      )}
      <ScrollTable label="Users table" columns={["Username", "Email", "Role", "Status", "Created", "Password"]}>
        {users.value?.map((u) => (
          <tr key={u.id}>
            <td>{u.username}</td>
            <td>{u.email ?? ""}</td>
            <td>
              <select
                aria-label={`Role of ${u.username}`}
                value={u.roles[0] ?? "viewer"}
                onChange={(e) => change(u.id, { role: e.target.value as Schemas["Role"] })}
              >
                <option value="viewer">viewer</option>
                <option value="editor">editor</option>
                <option value="admin">admin</option>
              </select>
            </td>
            <td>
              {u.status === "pending" ? (
                <button type="button" onClick={() => change(u.id, { status: "active" })} aria-label={`Approve ${u.username}`}>
                  Approve
                </button>
              ) : (
                <select
                  aria-label={`Status of ${u.username}`}
                  value={u.status}
                  onChange={(e) => change(u.id, { status: e.target.value as Schemas["AccountStatus"] })}
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
