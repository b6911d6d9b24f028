// A small history router: the API serves the app's HTML on every path
// outside /api/ and /assets/, so deep links work on reload.
import { useEffect, useRef, useState, type AnchorHTMLAttributes, type MouseEvent } from "react";

const listeners = new Set<() => void>();
/** Questions asked before leaving a page with unsaved work (`useLeaveGuard`). */
const guards = new Set<() => string | null>();

function leaving(): boolean {
  for (const guard of guards) {
    const question = guard();
    if (question && !window.confirm(question)) return false;
  }
  return true;
}

/** While `question()` gives a question, leaving the page (a link in the app,
 * a reload, closing the tab) asks it first. */
export function useLeaveGuard(question: () => string | null): void {
  const latest = useRef(question);
  latest.current = question;
  useEffect(() => {
    const guard = () => latest.current();
    const unload = (e: BeforeUnloadEvent) => {
      if (guard()) e.preventDefault();
    };
    guards.add(guard);
    window.addEventListener("beforeunload", unload);
    return () => {
      guards.delete(guard);
      window.removeEventListener("beforeunload", unload);
    };
  }, []);
}

export function navigate(to: string, replace = false): void {
  if (!leaving()) return;
  if (replace) history.replaceState(null, "", to);
  else history.pushState(null, "", to);
  listeners.forEach((l) => l());
  window.scrollTo(0, 0);
}

/** Changes the address's query in place (a table's sort or filter), with no
 * new history entry, no scrolling and no leave question. */
export function replaceQuery(params: URLSearchParams): void {
  const query = params.toString();
  history.replaceState(null, "", `${window.location.pathname}${query ? `?${query}` : ""}`);
  listeners.forEach((l) => l());
}

export function useLocation(): URL {
  const [, setTick] = useState(0);
  useEffect(() => {
    const update = () => setTick((t) => t + 1);
    listeners.add(update);
    window.addEventListener("popstate", update);
    return () => {
      listeners.delete(update);
      window.removeEventListener("popstate", update);
    };
  }, []);
  return new URL(window.location.href);
}

export function Link({ href, onClick, ...rest }: AnchorHTMLAttributes<HTMLAnchorElement> & { href: string }) {
  const follow = (e: MouseEvent<HTMLAnchorElement>) => {
    onClick?.(e);
    if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
    e.preventDefault();
    navigate(href);
  };
  return <a href={href} onClick={follow} {...rest} />;
}
