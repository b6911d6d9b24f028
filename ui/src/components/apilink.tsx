// A link to an API document: direct when anyone may read it, else through
// the API view screen (`/api-view`), which opens it with the session a
// plain link does not carry.
import { Link } from "../lib/router";

export function ApiLink({ path, open, children }: { path: string; open: boolean; children: string }) {
  if (open) return <a href={path}>{children}</a>;
  return <Link href={`/api-view?path=${encodeURIComponent(path)}`}>{children}</Link>;
}
