import { useEffect, useRef, useState, type DragEvent, type FormEvent } from "react";
import { get, send, upload, type Schemas } from "../api";
import { Link, navigate } from "../router";
import { ErrorNote, SignedIn, bytes } from "./common";

type Job = Schemas["JobView"];
type Sending = { name: string; sent: number; total: number; jobId?: string; error?: unknown };

const FINISHED = ["succeeded", "failed", "cancelled"];

/** A job followed until it finishes: its step and how much is done. */
export function useJob(jobId: string | undefined): Job | null {
  const [job, setJob] = useState<Job | null>(null);
  useEffect(() => {
    setJob(null);
    if (!jobId) return;
    let stop = false;
    const poll = async () => {
      while (!stop) {
        try {
          const seen = await get<Job>(`/api/jobs/${jobId}`);
          setJob(seen);
          if (FINISHED.includes(seen.status)) return;
        } catch {
          // A blip: try again on the next round.
        }
        await new Promise((r) => setTimeout(r, 700));
      }
    };
    poll();
    return () => {
      stop = true;
    };
  }, [jobId]);
  return job;
}

export function JobProgress({ job }: { job: Job | null }) {
  if (!job) return <span>queued</span>;
  const p = job.progress;
  const percent = p?.total ? Math.round((100 * p.done) / p.total) : null;
  return (
    <span className="progress-text">
      {job.status}
      {job.step && job.status === "running" ? ` · ${job.step}` : ""}
      {p && job.status === "running" ? ` · ${p.done.toLocaleString()}${p.total ? ` of ${p.total.toLocaleString()}` : ""}` : ""}
      {percent !== null && job.status === "running" && (
        <progress max={100} value={percent} aria-label={`${job.step ?? "progress"}: ${percent}%`} />
      )}
      {job.error && <span className="error"> {job.error.detail}</span>}
    </span>
  );
}

function UploadRow({ item, single }: { item: Sending; single: boolean }) {
  const job = useJob(item.jobId);
  const dataset = job?.status === "succeeded" ? (job.dataset_id ?? job.dataset_ids[0]) : undefined;
  useEffect(() => {
    // One file: its dataset opens once it is ready.
    if (dataset && single) navigate(`/datasets/${dataset}`);
  }, [dataset, single]);
  const percent = item.total ? Math.round((100 * item.sent) / item.total) : 0;
  return (
    <li className="upload-row">
      <strong>{item.name}</strong>
      {!item.jobId && !item.error && (
        <span>
          sending {bytes(item.sent)} of {bytes(item.total)}
          <progress max={100} value={percent} aria-label={`sending ${item.name}: ${percent}%`} />
        </span>
      )}
      {item.error ? <ErrorNote error={item.error} /> : null}
      {item.jobId && <JobProgress job={job} />}
      {dataset && <Link href={`/datasets/${dataset}`}>Open the dataset</Link>}
    </li>
  );
}

export function Upload() {
  const [items, setItems] = useState<Sending[]>([]);
  const [dragging, setDragging] = useState(false);
  const picker = useRef<HTMLInputElement>(null);

  const start = (files: File[]) => {
    const base = items.length;
    setItems((now) => [...now, ...files.map((f) => ({ name: f.name, sent: 0, total: f.size }))]);
    files.forEach((file, i) => {
      const index = base + i;
      const update = (change: Partial<Sending>) =>
        setItems((now) => now.map((it, j) => (j === index ? { ...it, ...change } : it)));
      const form = new FormData();
      form.append("file", file);
      upload("/api/datasets/upload", form, (sent, total) => update({ sent, total })).then(
        (accepted) => update({ jobId: accepted.job_id }),
        (error) => update({ error }),
      );
    });
  };
  const drop = (e: DragEvent) => {
    e.preventDefault();
    setDragging(false);
    start(Array.from(e.dataTransfer.files));
  };

  return (
    <SignedIn>
      <section>
        <h1>Upload</h1>
        <div
          className={`dropzone${dragging ? " over" : ""}`}
          onDragOver={(e) => {
            e.preventDefault();
            setDragging(true);
          }}
          onDragLeave={() => setDragging(false)}
          onDrop={drop}
        >
          <p>Drop GeoPackage, GeoJSON, CSV, zipped Shapefile or GeoTIFF files here, or</p>
          <button type="button" onClick={() => picker.current?.click()}>
            Choose files
          </button>
          <input
            ref={picker}
            type="file"
            multiple
            hidden
            aria-label="Files to upload"
            onChange={(e) => {
              start(Array.from(e.target.files ?? []));
              e.target.value = "";
            }}
          />
        </div>
        <ul className="uploads" aria-live="polite">
          {items.map((item, i) => (
            <UploadRow key={i} item={item} single={items.length === 1} />
          ))}
        </ul>
        <ImportUrl />
      </section>
    </SignedIn>
  );
}

function ImportUrl() {
  const [url, setUrl] = useState("");
  const [jobId, setJobId] = useState<string>();
  const [error, setError] = useState<unknown>(null);
  const job = useJob(jobId);
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setError(null);
    try {
      setJobId((await send<Schemas["JobAccepted"]>("POST", "/api/datasets/import-url", { url })).job_id);
    } catch (err) {
      setError(err);
    }
  };
  const dataset = job?.status === "succeeded" ? (job.dataset_id ?? job.dataset_ids[0]) : undefined;
  return (
    <form onSubmit={submit} className="stack" aria-labelledby="import-url">
      <h2 id="import-url">Import from a URL</h2>
      <label>
        File URL
        <input type="url" value={url} onChange={(e) => setUrl(e.target.value)} required />
      </label>
      <button type="submit">Import</button>
      <ErrorNote error={error} />
      {jobId && <JobProgress job={job} />}
      {dataset && <Link href={`/datasets/${dataset}`}>Open the dataset</Link>}
    </form>
  );
}
