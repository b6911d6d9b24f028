// An API document opened with the session of the person signed in: links
// to a private dataset's collection, items, TileJSON or style, and the
// admin's metrics, need a credential a plain link does not carry, so the
// app fetches them and shows what the API answered.
import { request } from "../../lib/api";
import { Link, useLocation } from "../../lib/router";
import { ErrorNote, useLoad, useTitle } from "../../components/common";

function pretty(type: string, text: string): string {
  if (!type.includes("json")) return text;
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
}

export function ApiView() {
  const location = useLocation();
  const path = location.searchParams.get("path") ?? "";
  // Only this service's API: the page never fetches another site for anyone.
  const allowed = path.startsWith("/api/") && !path.startsWith("//");
  useTitle(`API: ${path}`);
  const body = useLoad(async () => {
    if (!allowed) throw new Error("This page opens addresses of this service's API only (they start with /api/).");
    // Any address of the API, as the link named it: not one of the client's typed calls.
    const response = await request(path, { headers: { Accept: "application/json, application/geo+json;q=0.9, text/plain;q=0.5" } });
    const type = response.headers.get("Content-Type") ?? "";
    return { type, text: pretty(type, await response.text()) };
  }, [path]);
  return (
    <section>
      <h1>API response</h1>
      <p className="wrap">
        <code>{path}</code>
      </p>
      <p className="meta">
        Opened with your sign-in. Programs reach the same address with an API key in the <code>X-Api-Key</code> header
        (Account page).
      </p>
      <ErrorNote error={body.error} />
      {!body.value && !body.error && <p className="loading">Loading…</p>}
      {body.value && (
        <>
          <p className="meta">{body.value.type}</p>
          <pre className="api-body" tabIndex={0} aria-label="Response body">
            {body.value.text}
          </pre>
        </>
      )}
      <p>
        <Link href="/datasets">Back to the datasets</Link>
      </p>
    </section>
  );
}
