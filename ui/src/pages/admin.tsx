import { useState } from "react";
import { get, send, type User } from "../api";
import { Link, useLocation } from "../router";
import { isAdmin, useSession } from "../session";
import { ErrorNote, SignedIn, useLoad, when } from "./common";

/** The admin screens, one link each. */
export function AdminNav() {
  const here = useLocation().pathname;
  const links: [string, string][] = [
    ["/admin/users", "Users"],
    ["/admin/providers", "Sign-in providers"],
  ];
  return (
    <nav aria-label="Admin" className="subnav">
      {links.map(([href, label]) => (
        <Link key={href} href={href} aria-current={here === href ? "page" : undefined}>
          {label}
        </Link>
      ))}
      <a href="/api/metrics">Metrics</a>
    </nav>
  );
}

/** Accounts: approve pending ones, change roles and status. */
export function AdminUsers() {
  const { user } = useSession();
  const users = useLoad(() => (isAdmin(user) ? get<User[]>("/api/admin/users") : Promise.resolve([])), [user?.id]);
  const [error, setError] = useState<unknown>(null);
  const change = async (id: string, update: Record<string, string>) => {
    setError(null);
    try {
      await send("PATCH", `/api/admin/users/${id}`, update);
      users.reload();
    } catch (err) {
      setError(err);
    }
  };
  return (
    <SignedIn>
      <section>
        <AdminNav />
        <h1>Users</h1>
        {!isAdmin(user) && <p>Only administrators manage accounts.</p>}
        <ErrorNote error={error ?? users.error} />
        <div className="table-scroll">
          <table>
            <thead>
              <tr>
                <th scope="col">Username</th>
                <th scope="col">Email</th>
                <th scope="col">Role</th>
                <th scope="col">Status</th>
                <th scope="col">Created</th>
              </tr>
            </thead>
            <tbody>
              {users.value?.map((u) => (
                <tr key={u.id}>
                  <td>{u.username}</td>
                  <td>{u.email ?? ""}</td>
                  <td>
                    <select
                      aria-label={`Role of ${u.username}`}
                      value={u.roles[0] ?? "viewer"}
                      onChange={(e) => change(u.id, { role: e.target.value })}
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
                        onChange={(e) => change(u.id, { status: e.target.value })}
                      >
                        <option value="active">active</option>
                        <option value="suspended">suspended</option>
                        <option value="deactivated">deactivated</option>
                      </select>
                    )}
                  </td>
                  <td>{when(u.created_at)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      </section>
    </SignedIn>
  );
}
