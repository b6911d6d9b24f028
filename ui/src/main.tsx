import { StrictMode, useEffect, useState, type ReactNode } from "react";
import { createRoot } from "react-dom/client";
import { Routes } from "./app/routes";
import { PendingBadge, usePendingCount } from "./features/admin/admin";
import { signOut } from "./lib/api";
import { Link, navigate, useLocation } from "./lib/router";
import { SessionProvider, isAdmin, useSession } from "./lib/session";
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
  const pending = usePendingCount();
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
            {isAdmin(user) && (
              <Link href="/admin/users">
                Admin <PendingBadge count={pending} />
              </Link>
            )}
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

createRoot(document.getElementById("root")!).render(
  <StrictMode>
    <SessionProvider>
      <Shell>
        <Routes />
      </Shell>
    </SessionProvider>
  </StrictMode>,
);
