// A job's kind and source as people read them, in the list and on its page.
import type { Schemas } from "../../lib/api";

type Job = Schemas["JobView"];

export const KINDS: Record<Job["kind"], string> = {
  ingest: "Upload",
  reupload: "Reupload",
  url_download: "URL import",
  rehydrate: "Rehydration",
  connector: "Connector pull",
  service_import: "Service import",
  archive: "Archive",
  restore: "Restore",
  tile_archive: "Tile archive (PMTiles)",
};

/** The part of a source people know it by: a URL's last path segment (a
 * service layer's number with its service), a file's name without folders. */
export function shortSource(source: string | null | undefined): string {
  if (!source) return "";
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(source)) {
    try {
      const url = new URL(source);
      const parts = url.pathname.split("/").filter(Boolean).map(decodeURIComponentSafe);
      const last = parts.pop();
      if (!last) return url.host;
      return /^\d+$/.test(last) && parts.length ? `${parts.pop()}/${last}` : last;
    } catch {
      return source;
    }
  }
  return source.split(/[\\/]/).pop() || source;
}

function decodeURIComponentSafe(part: string): string {
  try {
    return decodeURIComponent(part);
  } catch {
    return part;
  }
}

/** The first words of a long text, whole words where they fit. */
export function startOf(text: string, length = 120): string {
  if (text.length <= length) return text;
  const cut = text.slice(0, length);
  const space = cut.lastIndexOf(" ");
  return `${space > length / 2 ? cut.slice(0, space) : cut}…`;
}

/** The job's name: its kind and what it read. */
export function jobTitle(job: Job): string {
  const kind = KINDS[job.kind] ?? job.kind;
  const source = shortSource(job.source);
  return source ? `${kind} of ${source}` : `${kind} job`;
}

/** The datasets the job made (a file of several layers makes several). */
export function datasetsOf(job: Job): string[] {
  return job.dataset_ids.length ? job.dataset_ids : job.dataset_id ? [job.dataset_id] : [];
}

/** What each step of a job does, in words; a step not named here shows as the worker wrote it. */
const STEPS: Record<string, string> = {
  reading: "Reading the file",
  downloading: "Downloading",
  validating: "Checking the image",
  checking: "Checking the rows",
  loading: "Loading rows",
  indexing: "Indexing",
  publishing: "Publishing",
  restoring: "Restoring from cold storage",
  describing: "Describing the data",
  copying: "Copying",
  "cutting tiles": "Cutting tiles",
  storing: "Storing",
};

export function stepWords(step: string): string {
  return STEPS[step] ?? step.charAt(0).toUpperCase() + step.slice(1);
}
