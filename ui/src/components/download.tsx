// A link to a file of the API, saved with the session: a plain link
// carries no credential for a private dataset's or a job's file, so a
// click fetches it with the session's token and saves what came. The
// address stays on the link (to copy, for a program with an API key).
import type { MouseEvent, ReactNode } from "react";
import { useAction } from "./common";

/** Saves a file the browser holds under `name`. */
export function saveBlob(name: string, blob: Blob): void {
  const link = document.createElement("a");
  link.href = URL.createObjectURL(blob);
  link.download = name;
  link.click();
  // After the click has started the download.
  setTimeout(() => URL.revokeObjectURL(link.href), 0);
}

export function DownloadLink({
  href,
  name,
  load,
  children,
}: {
  href: string;
  /** The file's name when saved. */
  name: string;
  /** The file, by one of the client's typed calls. */
  load: () => Promise<Blob>;
  children: ReactNode;
}) {
  const action = useAction();
  const save = (e: MouseEvent<HTMLAnchorElement>) => {
    e.preventDefault();
    if (!action.busy) action.run(async () => saveBlob(name, await load()));
  };
  return (
    <>
      <a href={href} download={name} onClick={save} aria-busy={action.busy}>
        {children}
      </a>
      {action.error ? (
        <span className="error" role="alert">
          {" "}
          {action.error instanceof Error ? action.error.message : String(action.error)}
        </span>
      ) : null}
    </>
  );
}
