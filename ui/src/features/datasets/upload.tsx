import { useEffect, useRef, useState, type DragEvent, type FormEvent } from "react";
import { client, data, upload } from "../../lib/api";
import { Link, navigate } from "../../lib/router";
import { ErrorNote, SignedIn, bytes, useAction, useLoad, useTitle } from "../../components/common";
import { JobProgress, useJob } from "../../components/job";
import { ImportService } from "./services";

type Sending = { name: string; sent: number; total: number; jobId?: string; previewJobId?: string; error?: unknown };
type FileLayer = { layer: string; name: string; geometry_type?: string | null; feature_count?: number | null };

/** Files that may hold several layers, whose layers are listed before loading when asked. */
const MULTI_LAYER = /\.(gpkg|zip)$/i;

/** A multi-layer file's layers (from its preview job), to choose which load. */
function LayerChoice({ item, onLoad }: { item: Sending; onLoad: (layers: string[]) => void }) {
  const preview = useJob(item.previewJobId);
  const layers = ((preview?.status === "succeeded" ? (preview.result as { layers?: FileLayer[] } | null)?.layers : null) ?? null) as FileLayer[] | null;
  const [chosen, setChosen] = useState<string[] | null>(null);
  const picked = chosen ?? layers?.map((l) => l.layer) ?? [];
  useEffect(() => {
    // One layer: nothing to choose.
    if (layers && layers.length <= 1) onLoad(layers.map((l) => l.layer));
  }, [layers?.length]);
  if (preview?.status === "failed") return <ErrorNote error={new Error(preview.error?.detail ?? "The file could not be read.")} />;
  if (!layers) return <span role="status">reading the file's layers…</span>;
  if (layers.length <= 1) return null;
  return (
    <fieldset className="stack wide">
      <legend>
        {item.name} holds {layers.length} layers: choose the ones to load
      </legend>
      {layers.map((l) => (
        <label key={l.layer} className="inline">
          <input
            type="checkbox"
            checked={picked.includes(l.layer)}
            onChange={(e) => setChosen(e.target.checked ? [...picked, l.layer] : picked.filter((x) => x !== l.layer))}
          />
          {l.name} ({l.geometry_type ?? "mixed geometry"}, {l.feature_count?.toLocaleString() ?? "?"} features)
        </label>
      ))}
      <button type="button" disabled={!picked.length} onClick={() => onLoad(picked)}>
        Load {picked.length} of {layers.length} layers
      </button>
    </fieldset>
  );
}

/** The titles of the datasets a job made (each layer's name unless a title was given), by id. */
function useTitles(ids: string[]) {
  return useLoad(
    async () =>
      Object.fromEntries(
        await Promise.all(
          ids.map((id) =>
            data(client.GET("/datasets/{dataset_id}", { params: { path: { dataset_id: id } } })).then(
              (d) => [id, d.title] as const,
              () => [id, null] as const,
            ),
          ),
        ),
      ) as Record<string, string | null>,
    [ids.join(",")],
  );
}

function UploadRow({ item, single, onLoad }: { item: Sending; single: boolean; onLoad: (layers: string[]) => void }) {
  const job = useJob(item.jobId);
  const made = job?.status === "succeeded" ? (job.dataset_ids.length ? job.dataset_ids : job.dataset_id ? [job.dataset_id] : []) : [];
  const titles = useTitles(made.length > 1 ? made : []);
  const dataset = made.length === 1 ? made[0] : undefined;
  useEffect(() => {
    // One file making one dataset: it opens once it is ready.
    if (dataset && single) navigate(`/datasets/${dataset}`);
  }, [dataset, single]);
  const percent = item.total ? Math.round((100 * item.sent) / item.total) : 0;
  return (
    <li className="upload-row">
      <strong>{item.name}</strong>
      {item.previewJobId && !item.jobId && !item.error && <LayerChoice item={item} onLoad={onLoad} />}
      {!item.jobId && !item.error && (!item.previewJobId || item.sent < item.total) && (
        <span>
          sending {bytes(item.sent)} of {bytes(item.total)}
          <progress max={100} value={percent} aria-label={`sending ${item.name}: ${percent}%`} />
        </span>
      )}
      {item.error ? <ErrorNote error={item.error} /> : null}
      {item.jobId && <JobProgress job={job} />}
      {dataset && <Link href={`/datasets/${dataset}`}>Open the dataset</Link>}
      {made.length > 1 && (
        <div>
          <p>{made.length} layers loaded; each became a dataset:</p>
          <ul>
            {made.map((id, i) => (
              <li key={id}>
                <Link href={`/datasets/${id}`}>{`Open ${titles.value?.[id] ?? `dataset ${i + 1} of ${made.length}`}`}</Link>
              </li>
            ))}
          </ul>
        </div>
      )}
    </li>
  );
}

export function Upload() {
  useTitle("Upload");
  const [items, setItems] = useState<Sending[]>([]);
  const [title, setTitle] = useState("");
  const [summary, setSummary] = useState("");
  const [visibility, setVisibility] = useState("private");
  const [dragging, setDragging] = useState(false);
  const picker = useRef<HTMLInputElement>(null);

  const [chooseLayers, setChooseLayers] = useState(true);
  const files = useRef<File[]>([]);
  const updater = (index: number) => (change: Partial<Sending>) =>
    setItems((now) => now.map((it, j) => (j === index ? { ...it, ...change } : it)));
  /** Loads the layers chosen of a file its preview read, from the file the preview kept (not sent again). */
  const loadPreviewed = (index: number, several: boolean, layers: string[]) => {
    const item = items[index];
    const update = updater(index);
    const name = files.current[index].name;
    const body = {
      layers,
      title: title.trim() ? (several ? `${title.trim()} (${name})` : title.trim()) : undefined,
      summary: summary.trim() || undefined,
      visibility,
    };
    data(client.POST("/datasets/upload/{job_id}/load", { params: { path: { job_id: item.previewJobId! } }, body })).then(
      (accepted) => update({ jobId: accepted.job_id }),
      (error) => update({ error }),
    );
  };
  /** Sends a file to load, or (`preview`) only to list its layers. */
  const send = (index: number, several: boolean, options: { preview?: boolean }) => {
    const file = files.current[index];
    const update = updater(index);
    const form = new FormData();
    // Text fields first: the API reads them before the file.
    if (options.preview) form.append("preview", "true");
    if (title.trim()) form.append("title", several ? `${title.trim()} (${file.name})` : title.trim());
    if (summary.trim()) form.append("summary", summary.trim());
    form.append("visibility", visibility);
    form.append("file", file);
    update({ sent: 0, total: file.size });
    upload("/api/datasets/upload", form, (sent, total) => update({ sent, total })).then(
      (accepted) => update(options.preview ? { previewJobId: accepted.job_id } : { jobId: accepted.job_id }),
      (error) => update({ error }),
    );
  };
  const start = (chosen: File[]) => {
    const base = items.length;
    files.current.push(...chosen);
    setItems((now) => [...now, ...chosen.map((f) => ({ name: f.name, sent: 0, total: f.size }))]);
    chosen.forEach((file, i) => send(base + i, chosen.length > 1, { preview: chooseLayers && MULTI_LAYER.test(file.name) }));
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
        <fieldset className="stack wide">
          <legend>About the files you upload next</legend>
          <div className="row">
            <label className="grow">
              Title (optional: the file's name otherwise)
              <input value={title} onChange={(e) => setTitle(e.target.value)} maxLength={500} />
            </label>
            <label>
              Visibility
              <select value={visibility} onChange={(e) => setVisibility(e.target.value)}>
                <option value="private">private: only you</option>
                <option value="restricted">restricted: people you grant</option>
                <option value="internal">internal: everyone signed in</option>
                <option value="public">public: anyone</option>
              </select>
            </label>
          </div>
          <label>
            Summary (optional)
            <textarea value={summary} onChange={(e) => setSummary(e.target.value)} rows={2} />
          </label>
          <label className="inline">
            <input type="checkbox" checked={chooseLayers} onChange={(e) => setChooseLayers(e.target.checked)} />
            Choose the layers of GeoPackages and zips before loading (the file is read first; the layers chosen then load
            from it)
          </label>
        </fieldset>
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
            <UploadRow
              key={i}
              item={item}
              single={items.length === 1}
              onLoad={(layers) => loadPreviewed(i, items.length > 1, layers)}
            />
          ))}
        </ul>
        <div className="columns">
          <ImportUrl />
          <ImportService />
        </div>
      </section>
    </SignedIn>
  );
}

function ImportUrl() {
  const [url, setUrl] = useState("");
  const [jobId, setJobId] = useState<string>();
  const action = useAction();
  const job = useJob(jobId);
  const submit = (e: FormEvent) => {
    e.preventDefault();
    action.run(async () =>
      setJobId((await data(client.POST("/datasets/import-url", { body: { url } }))).job_id),
    );
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
      <ErrorNote error={action.error} />
      {jobId && <JobProgress job={job} />}
      {dataset && <Link href={`/datasets/${dataset}`}>Open the dataset</Link>}
    </form>
  );
}
