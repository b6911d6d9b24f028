import { useCallback, useEffect, useRef, useState, type ReactNode } from "react";
import { ApiError } from "../lib/api";
import { Link } from "../lib/router";
import { useSession } from "../lib/session";
export { cellText } from "./text";

/** A problem document's detail, as people read it. */
export function ErrorNote({ error }: { error: unknown }) {
  if (!error) return null;
  const text = error instanceof Error ? error.message : String(error);
  return (
    <p className="error" role="alert">
      {text}
    </p>
  );
}

export function NotFound({ detail }: { detail?: string }) {
  useTitle("Not found");
  return (
    <section>
      <h1>Not found</h1>
      <p>{detail ?? "There is no page at this address."}</p>
      <p>
        <Link href="/datasets">Back to the datasets</Link>
      </p>
    </section>
  );
}

/** A page's data: loading, then the value or the API's problem. `load`
 * runs again when `deps` change; only the latest run's answer is kept, so
 * a slow earlier answer never replaces a newer one. */
export function useLoad<T>(load: () => Promise<T>, deps: unknown[]) {
  const [value, setValue] = useState<T | null>(null);
  const [error, setError] = useState<unknown>(null);
  const latest = useRef(0);
  const run = useCallback(load, deps);
  const reload = useCallback(() => {
    const ticket = ++latest.current;
    setError(null);
    run().then(
      (v) => ticket === latest.current && setValue(v),
      (e) => ticket === latest.current && setError(e),
    );
  }, [run]);
  useEffect(reload, [reload]);
  return { value, error, reload, setValue };
}

/** What a button does: `run` clears the last problem, does the work and
 * keeps the API's problem for `ErrorNote`; `busy` while it runs. */
export function useAction() {
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const run = useCallback(async (work: () => Promise<unknown>) => {
    setError(null);
    setBusy(true);
    try {
      await work();
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  }, []);
  return { run, error, busy };
}

/** The page when signed in; otherwise a pointer to the sign-in page. */
export function SignedIn({ children }: { children: ReactNode }) {
  const { user } = useSession();
  if (!user) {
    const back = encodeURIComponent(window.location.pathname + window.location.search);
    return (
      <section>
        <h1>Sign in first</h1>
        <p>
          This page needs an account. <Link href={`/signin?next=${back}`}>Sign in</Link>
        </p>
      </section>
    );
  }
  return <>{children}</>;
}

/** A failed load: a 404 as the not-found page, the rest as the problem. */
export function LoadFailed({ error }: { error: unknown }) {
  if (error instanceof ApiError && error.status === 404) return <NotFound detail={error.message} />;
  return (
    <section>
      <h1>Something went wrong</h1>
      <ErrorNote error={error} />
    </section>
  );
}

export function when(iso?: string | null): string {
  return iso ? new Date(iso).toLocaleString() : "";
}

export function bytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KB`;
  if (n < 1024 ** 3) return `${(n / 1024 / 1024).toFixed(1)} MB`;
  return `${(n / 1024 ** 3).toFixed(2)} GB`;
}

/** Whether the window is phone-narrow (the stylesheet's 700 px breakpoint), kept true as it is resized. */
export function useNarrow(): boolean {
  const query = "(max-width: 700px)";
  const [narrow, setNarrow] = useState(() => window.matchMedia(query).matches);
  useEffect(() => {
    const media = window.matchMedia(query);
    const change = () => setNarrow(media.matches);
    media.addEventListener("change", change);
    return () => media.removeEventListener("change", change);
  }, []);
  return narrow;
}

/** The browser tab's title for this screen (a name people typed is shown as text by the browser). */
export function useTitle(title: string | null | undefined): void {
  useEffect(() => {
    if (title) document.title = `${title} · Spatial Data Catalog`;
  }, [title]);
}

/** Copies `text` to the clipboard and says so; where the page may not
 * write the clipboard (plain http off loopback), it says to copy by hand. */
export function CopyButton({ text, label }: { text: string; label: string }) {
  const [said, setSaid] = useState("");
  const copy = () =>
    navigator.clipboard
      ? navigator.clipboard.writeText(text).then(
          () => setSaid("Copied."),
          () => setSaid("The browser refused: select the text and copy it."),
        )
      : setSaid("This page may not copy: select the text and copy it.");
  return (
    <span className="copy">
      <button type="button" onClick={copy} aria-label={label}>
        Copy
      </button>
      <span role="status">{said}</span>
    </span>
  );
}

/** A column heading of a `ScrollTable`: its text, or a label screen
 * readers alone hear (a column of buttons). */
export type Column = string | { hidden: string };

/** A table with one heading row, in a box that scrolls sideways on a
 * narrow screen (focusable, so a keyboard can scroll it too). */
export function ScrollTable({ label, columns, children }: { label: string; columns: Column[]; children: ReactNode }) {
  return (
    <div className="table-scroll" tabIndex={0} role="region" aria-label={label}>
      <table>
        <thead>
          <tr>
            {columns.map((c) =>
              typeof c === "string" ? (
                <th key={c} scope="col">
                  {c}
                </th>
              ) : (
                <th key={c.hidden} scope="col">
                  <span className="visually-hidden">{c.hidden}</span>
                </th>
              ),
            )}
          </tr>
        </thead>
        <tbody>{children}</tbody>
      </table>
    </div>
  );
}
