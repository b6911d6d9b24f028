// The route table: every screen by its path. A pattern's `:name` takes one
// segment (as the screen's parameter) and a closing `*` any further ones;
// the first pattern that matches is shown, the not-found page otherwise.
import { useEffect, useRef, type ReactNode } from "react";
import { NotFound } from "../components/common";
import { Account } from "../features/account/account";
import { AdminBanner, AdminQuotas, AdminUsers } from "../features/admin/admin";
import { AdminMetrics } from "../features/admin/metrics";
import { AdminNotifications } from "../features/admin/notifications";
import { AdminProviders } from "../features/admin/providers";
import { ApiView } from "../features/apiview/apiview";
import { ForgotPassword, OAuthCallback, Register, ResetPassword, SignIn } from "../features/auth/signin";
import { Catalog } from "../features/catalog/catalog";
import { DatasetPage } from "../features/datasets/dataset";
import { Upload } from "../features/datasets/upload";
import { JobPage } from "../features/jobs/job";
import { Jobs } from "../features/jobs/jobs";
import { MapEditor } from "../features/maps/mapeditor";
import { Maps, SharedMap } from "../features/maps/maps";
import { useLocation } from "../lib/router";
import { useSession } from "../lib/session";

type Params = Record<string, string>;
type Route = { pattern: string; page: (params: Params) => ReactNode };

const ROUTES: Route[] = [
  { pattern: "/", page: () => <Catalog /> },
  { pattern: "/datasets", page: () => <Catalog /> },
  { pattern: "/datasets/:id", page: ({ id }) => <DatasetPage id={id} /> },
  { pattern: "/signin", page: () => <SignIn /> },
  { pattern: "/register", page: () => <Register /> },
  { pattern: "/forgot-password", page: () => <ForgotPassword /> },
  { pattern: "/reset-password", page: () => <ResetPassword /> },
  { pattern: "/oauth/callback", page: () => <OAuthCallback /> },
  { pattern: "/upload", page: () => <Upload /> },
  { pattern: "/jobs", page: () => <Jobs /> },
  { pattern: "/jobs/:id", page: ({ id }) => <JobPage id={id} /> },
  { pattern: "/maps", page: () => <Maps /> },
  // Deeper paths of a share link show its map too.
  { pattern: "/maps/shared/:token/*", page: ({ token }) => <SharedMap token={token} /> },
  { pattern: "/maps/:id", page: ({ id }) => <MapEditor id={id} /> },
  { pattern: "/account", page: () => <Account /> },
  { pattern: "/api-view", page: () => <ApiView /> },
  { pattern: "/admin", page: () => <AdminUsers /> },
  { pattern: "/admin/users", page: () => <AdminUsers /> },
  { pattern: "/admin/metrics", page: () => <AdminMetrics /> },
  { pattern: "/admin/quotas", page: () => <AdminQuotas /> },
  { pattern: "/admin/providers", page: () => <AdminProviders /> },
  { pattern: "/admin/notifications", page: () => <AdminNotifications /> },
  { pattern: "/admin/banner", page: () => <AdminBanner /> },
];

/** The parameters of `path` under `pattern`, or null when it does not match. */
function match(pattern: string, path: string): Params | null {
  const want = pattern.split("/");
  const have = path.split("/");
  const rest = want[want.length - 1] === "*";
  if (rest) want.pop();
  if (rest ? have.length < want.length : have.length !== want.length) return null;
  const params: Params = {};
  for (const [i, part] of want.entries()) {
    if (part.startsWith(":")) {
      if (!have[i]) return null;
      params[part.slice(1)] = have[i];
    } else if (part !== have[i]) return null;
  }
  return params;
}

export function Routes() {
  const location = useLocation();
  const { ready } = useSession();
  const main = useRef<string>(location.pathname);
  useEffect(() => {
    // After a navigation, focus moves to the new page for screen readers.
    if (main.current !== location.pathname) document.getElementById("main")?.focus();
    main.current = location.pathname;
  }, [location.pathname]);
  if (!ready) return <p className="loading">Loading…</p>;
  const path = location.pathname.replace(/\/+$/, "") || "/";
  for (const route of ROUTES) {
    const params = match(route.pattern, path);
    if (params) return route.page(params);
  }
  return <NotFound />;
}
