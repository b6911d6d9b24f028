import { useEffect, useState, type FormEvent } from "react";
import { client, data, setAccessToken, signIn } from "../../lib/api";
import { Link, navigate } from "../../lib/router";
import { useSession } from "../../lib/session";
import { ErrorNote, useAction, useTitle } from "../../components/common";

const RETURN_KEY = "catalog.return_to";

/** Where to go after signing in: a same-site path only. */
function returnPath(): string {
  const next = new URLSearchParams(window.location.search).get("next") ?? "/datasets";
  return next.startsWith("/") && !next.startsWith("//") ? next : "/datasets";
}

export function SignIn() {
  useTitle("Sign in");
  const { config, reload } = useSession();
  const [username, setUsername] = useState("");
  const [password, setPassword] = useState("");
  const action = useAction();

  const submit = (e: FormEvent) => {
    e.preventDefault();
    action.run(async () => {
      await signIn(username, password);
      await reload();
      navigate(returnPath(), true);
    });
  };
  const sso = (loginUrl: string) => {
    sessionStorage.setItem(RETURN_KEY, returnPath());
    window.location.assign(loginUrl);
  };

  return (
    <section className="narrow">
      <h1>Sign in</h1>
      {config?.password_login_enabled !== false && (
        <form onSubmit={submit} className="stack">
          <label>
            Username
            <input value={username} onChange={(e) => setUsername(e.target.value)} autoComplete="username" required />
          </label>
          <label>
            Password
            <input
              type="password"
              value={password}
              onChange={(e) => setPassword(e.target.value)}
              autoComplete="current-password"
              required
            />
          </label>
          <ErrorNote error={action.error} />
          <button type="submit" disabled={action.busy}>
            Sign in
          </button>
          <Link href="/forgot-password">Forgot your password?</Link>
        </form>
      )}
      {config && config.oauth_providers.length > 0 && (
        <div className="stack sso">
          {config.oauth_providers.map((p) => (
            <button key={p.slug} type="button" onClick={() => sso(p.login_url)}>
              Sign in with {p.display_name}
            </button>
          ))}
        </div>
      )}
      {config?.registration_enabled && (
        <p>
          No account? <Link href="/register">Register</Link>
        </p>
      )}
    </section>
  );
}

export function Register() {
  useTitle("Register");
  const [form, setForm] = useState({ username: "", email: "", password: "" });
  const [done, setDone] = useState<string | null>(null);
  const action = useAction();
  const submit = (e: FormEvent) => {
    e.preventDefault();
    action.run(async () => {
      const user = await data(
        client.POST("/auth/register", {
          body: { username: form.username, email: form.email, password: form.password },
        }),
      );
      setDone(
        user.status === "pending"
          ? "Your account waits for an administrator's approval. You can sign in once it is approved."
          : "Your account is ready: sign in.",
      );
    });
  };
  if (done)
    return (
      <section className="narrow">
        <h1>Registered</h1>
        <p role="status">{done}</p>
        <Link href="/signin">Sign in</Link>
      </section>
    );
  const field = (name: keyof typeof form) => ({
    value: form[name],
    onChange: (e: { target: { value: string } }) => setForm({ ...form, [name]: e.target.value }),
  });
  return (
    <section className="narrow">
      <h1>Register</h1>
      <form onSubmit={submit} className="stack">
        <label>
          Username
          <input {...field("username")} autoComplete="username" required />
        </label>
        <label>
          Email
          <input type="email" {...field("email")} autoComplete="email" required />
        </label>
        <label>
          Password
          <input type="password" {...field("password")} autoComplete="new-password" required />
        </label>
        <ErrorNote error={action.error} />
        <button type="submit">Register</button>
      </form>
    </section>
  );
}

/** The end of single sign-on: the token in the fragment, or the refusal in the query. */
export function OAuthCallback() {
  useTitle("Signing in");
  const { reload } = useSession();
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    const fragment = new URLSearchParams(window.location.hash.slice(1));
    const query = new URLSearchParams(window.location.search);
    const token = fragment.get("access_token");
    if (!token) {
      setError(query.get("error_description") ?? "The sign-in did not finish; start it again.");
      return;
    }
    // The token leaves the address (and so the history) at once.
    history.replaceState(null, "", "/oauth/callback");
    setAccessToken(token);
    const back = sessionStorage.getItem(RETURN_KEY) ?? "/datasets";
    sessionStorage.removeItem(RETURN_KEY);
    reload().then(() => navigate(back.startsWith("/") && !back.startsWith("//") ? back : "/datasets", true));
  }, [reload]);
  return (
    <section className="narrow">
      <h1>Signing in</h1>
      {error ? (
        <>
          <p className="error" role="alert">
            {error}
          </p>
          <Link href="/signin">Back to sign in</Link>
        </>
      ) : (
        <p role="status">Finishing the sign-in…</p>
      )}
    </section>
  );
}

/** A forgotten password: a link by mail when the service sends mail, else word to ask an admin. */
export function ForgotPassword() {
  useTitle("Forgotten password");
  const { config } = useSession();
  const [account, setAccount] = useState("");
  const [sent, setSent] = useState(false);
  const action = useAction();
  const submit = (e: FormEvent) => {
    e.preventDefault();
    action.run(async () => {
      await client.POST("/auth/password-reset/request", { body: { account } });
      setSent(true);
    });
  };
  return (
    <section className="narrow">
      <h1>Forgotten password</h1>
      {!config ? (
        <p className="loading">Loading…</p>
      ) : config.password_reset_by_mail ? (
        sent ? (
          <p role="status">
            If an account has that username or address, a link to choose a new password is on its way to its address. It
            works for a day.
          </p>
        ) : (
          <form onSubmit={submit} className="stack">
            <label>
              Username or email
              <input value={account} onChange={(e) => setAccount(e.target.value)} autoComplete="username" required />
            </label>
            <ErrorNote error={action.error} />
            <button type="submit" disabled={action.busy}>
              Send me a link
            </button>
          </form>
        )
      ) : (
        <p>
          This service sends no mail. Ask an administrator: they can make you a one-time link to choose a new password.
        </p>
      )}
      <p>
        <Link href="/signin">Back to sign in</Link>
      </p>
    </section>
  );
}

/** The page a reset link opens: its token in the fragment, read once and taken out of the address. */
export function ResetPassword() {
  useTitle("Choose a new password");
  const [token] = useState(() => new URLSearchParams(window.location.hash.slice(1)).get("token") ?? "");
  useEffect(() => {
    if (window.location.hash) history.replaceState(null, "", window.location.pathname);
  }, []);
  const [password, setPassword] = useState("");
  const [again, setAgain] = useState("");
  const [done, setDone] = useState(false);
  const action = useAction();
  const submit = (e: FormEvent) => {
    e.preventDefault();
    action.run(async () => {
      if (password !== again) throw new Error("The two passwords differ.");
      await client.POST("/auth/password-reset", { body: { token, new_password: password } });
      setDone(true);
    });
  };
  if (done)
    return (
      <section className="narrow">
        <h1>Password set</h1>
        <p role="status">Your new password is set, and every earlier sign-in of yours has ended.</p>
        <p>
          <Link href="/signin">Sign in</Link>
        </p>
      </section>
    );
  return (
    <section className="narrow">
      <h1>Choose a new password</h1>
      {!token ? (
        <p>This page opens from a password reset link. Ask for a new one if yours was cut.</p>
      ) : (
        <form onSubmit={submit} className="stack">
          <label>
            New password
            <input type="password" value={password} onChange={(e) => setPassword(e.target.value)} autoComplete="new-password" required />
          </label>
          <label>
            New password again
            <input type="password" value={again} onChange={(e) => setAgain(e.target.value)} autoComplete="new-password" required />
          </label>
          <p className="meta">At least 12 characters, with three of: lower case, upper case, digits, symbols.</p>
          <ErrorNote error={action.error} />
          <button type="submit" disabled={action.busy}>
            Set the password
          </button>
        </form>
      )}
    </section>
  );
}
