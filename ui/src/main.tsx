import { StrictMode, useEffect, useRef, useState, type ReactNode } from "react";
import { createRoot } from "react-dom/client";
import { signOut } from "./api";
import { Link, navigate, useLocation } from "./router";
import { SessionProvider, isAdmin, useSession } from "./session";
import { SignIn, Register, OAuthCallback, ForgotPassword, ResetPassword } from "./pages/signin";
import { Catalog } from "./pages/catalog";
import { DatasetPage } from "./pages/dataset";
import { Upload } from "./pages/upload";
import { Jobs } from "./pages/jobs";
import { Maps, SharedMap } from "./pages/maps";
import { MapEditor } from "./pages/mapeditor";
import { Account } from "./pages/account";
import { AdminBanner, AdminQuotas, AdminUsers } from "./pages/admin";
import { AdminProviders } from "./pages/providers";
import { AdminNotifications } from "./pages/notifications";
import { NotFound } from "./pages/common";
import { ApiView } from "./pages/apiview";
import "./styles.css";

function Banner() {
  const { config } = useSession();
  const banner = config?.banner;
  if (!banner?.enabled || !banner.text) return null;
  return (
    <div className="banner" role="note" style={banner.color ? { background: banner.color } : undefined}>
      {banner.text}
    </div>
  );
}

function Shell({ children }: { children: ReactNode }) {
  const { user, setUser } = useSession();
  const location = useLocation();
  // On a phone the menu folds away behind one button, and folds again after each move.
  const [menuOpen, setMenuOpen] = useState(false);
  useEffect(() => setMenuOpen(false), [location.pathname]);
  const leave = async () => {
    await signOut().catch(() => undefined);
    setUser(null);
    navigate("/signin");
  };
  return (
    <>
      <a className="skip" href="#main">
        Skip to content
      </a>
      {/* The banner sits in the header landmark, so every part of the page is in one. */}
      <header>
        <Banner />
        <div className={`top${menuOpen ? " open" : ""}`}>
          <Link href="/" className="brand">
            Spatial Data Catalog
          </Link>
          <button
            type="button"
            className="menu-toggle"
            aria-expanded={menuOpen}
            aria-controls="main-nav"
            onClick={() => setMenuOpen(!menuOpen)}
          >
            Menu
          </button>
          <nav aria-label="Main" id="main-nav" onClick={() => setMenuOpen(false)}>
            <Link href="/datasets">Datasets</Link>
            <Link href="/maps">Maps</Link>
            <Link href="/upload">Upload</Link>
            {user && <Link href="/jobs">Jobs</Link>}
            {isAdmin(user) && <Link href="/admin/users">Admin</Link>}
          </nav>
          <div className="who">
            {user ? (
              <>
                <Link href="/account" aria-label={`Account of ${user.username}`}>
                  {user.username}
                </Link>
                <button type="button" onClick={leave} title="Signs out this browser; other devices stay signed in">
                  Sign out
                </button>
              </>
            ) : (
              <Link href="/signin">Sign in</Link>
            )}
          </div>
        </div>
      </header>
      <main id="main" tabIndex={-1}>
        {children}
      </main>
    </>
  );
}

function Routes() {
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
  const [, first, second, third] = path.split("/");
  if (path === "/" || path === "/datasets") return <Catalog />;
  if (first === "datasets" && second && !third) return <DatasetPage id={second} />;
  if (path === "/signin") return <SignIn />;
  if (path === "/register") return <Register />;
  if (path === "/forgot-password") return <ForgotPassword />;
  if (path === "/reset-password") return <ResetPassword />;
  if (path === "/oauth/callback") return <OAuthCallback />;
  if (path === "/upload") return <Upload />;
  if (path === "/jobs") return <Jobs />;
  if (path === "/maps") return <Maps />;
  if (first === "maps" && second === "shared" && third) return <SharedMap token={third} />;
  if (first === "maps" && second && !third) return <MapEditor id={second} />;
  if (path === "/account") return <Account />;
  if (path === "/api-view") return <ApiView />;
  if (path === "/admin/users" || path === "/admin") return <AdminUsers />;
  if (path === "/admin/quotas") return <AdminQuotas />;
  if (path === "/admin/providers") return <AdminProviders />;
  if (path === "/admin/notifications") return <AdminNotifications />;
  if (path === "/admin/banner") return <AdminBanner />;
  return <NotFound />;
}

createRoot(document.getElementById("root")!).render(
  <StrictMode>
    <SessionProvider>
      <Shell>
        <Routes />
      </Shell>
    </SessionProvider>
  </StrictMode>,
);
