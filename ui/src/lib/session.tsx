// Who is signed in, and the site's sign-in options and banner, read at
// page load (so provider changes show without a restart).
import { createContext, useCallback, useContext, useEffect, useState, type ReactNode } from "react";
import { client, data, refresh, type User } from "./api";

export type AuthConfig = {
  password_login_enabled: boolean;
  registration_enabled: boolean;
  password_reset_by_mail?: boolean;
  oauth_providers: { slug: string; display_name: string; login_url: string }[];
  banner: { enabled: boolean; text?: string | null; color?: string | null };
};

type Session = {
  user: User | null;
  config: AuthConfig | null;
  ready: boolean;
  reload: () => Promise<void>;
  setUser: (user: User | null) => void;
};

const SessionContext = createContext<Session | null>(null);

export function SessionProvider({ children }: { children: ReactNode }) {
  const [user, setUser] = useState<User | null>(null);
  const [config, setConfig] = useState<AuthConfig | null>(null);
  const [ready, setReady] = useState(false);

  const reload = useCallback(async () => {
    try {
      setUser(await data(client.GET("/auth/me")));
    } catch {
      setUser(null);
    }
  }, []);

  useEffect(() => {
    data<AuthConfig>(client.GET("/auth/config")).then(setConfig, () => setConfig(null));
    // The SSO callback brings its own token; elsewhere the refresh cookie may.
    if (window.location.pathname === "/oauth/callback") {
      setReady(true);
      return;
    }
    refresh()
      .then((signedIn) => (signedIn ? reload() : undefined))
      .finally(() => setReady(true));
  }, [reload]);

  return (
    <SessionContext.Provider value={{ user, config, ready, reload, setUser }}>{children}</SessionContext.Provider>
  );
}

export function useSession(): Session {
  const session = useContext(SessionContext);
  if (!session) throw new Error("useSession outside SessionProvider");
  return session;
}

export function isAdmin(user: User | null): boolean {
  return !!user?.roles.includes("admin");
}
