import { useEffect, useState } from "react";
import { get, send, upload, type Schemas } from "../api";
import { ErrorNote, useLoad, when } from "./common";
import { JobProgress, useJob } from "./upload";

type Dataset = Schemas["Dataset"];
type Column = { name: string; type?: string };
type Preview = {
  feature_count?: number | null;
  geometry_type?: string;
  schema_diff: {
    columns_added: Column[];
    columns_removed: Column[];
    type_changes: { name: string; old_type: string; new_type: string }[];
    row_count_old?: number | null;
    row_count_new?: number | null;
  };
};

/** New data for a dataset: first a preview of what changes, then the replacement. */
export function Reupload({ dataset, onReplaced }: { dataset: Dataset; onReplaced: () => void }) {
  const [file, setFile] = useState<File | null>(null);
  const [previewJob, setPreviewJob] = useState<string>();
  const [replaceJob, setReplaceJob] = useState<string>();
  const [error, setError] = useState<unknown>(null);
  const preview = useJob(previewJob);
  const replace = useJob(replaceJob);
  const result = preview?.status === "succeeded" ? (preview.result as unknown as Preview) : null;

  const start = async (previewOnly: boolean) => {
    if (!file) return;
    setError(null);
    const form = new FormData();
    form.append("file", file);
    if (previewOnly) form.append("preview", "true");
    try {
      const accepted = await upload(`/api/datasets/${dataset.id}/reupload`, form, () => undefined);
      if (previewOnly) setPreviewJob(accepted.job_id);
      else setReplaceJob(accepted.job_id);
    } catch (err) {
      setError(err);
    }
  };
  const replaced = replace?.status === "succeeded";
  useEffect(() => {
    if (!replaced) return;
    setReplaceJob(undefined);
    setPreviewJob(undefined);
    setFile(null);
    onReplaced();
  }, [replaced, onReplaced]);
  const diff = result?.schema_diff;
  return (
    <section aria-labelledby="reupload">
      <h2 id="reupload">Replace the data</h2>
      <div className="row">
        <label className="grow">
          New file
          <input
            type="file"
            onChange={(e) => {
              setFile(e.target.files?.[0] ?? null);
              setPreviewJob(undefined);
            }}
          />
        </label>
        <button type="button" disabled={!file} onClick={() => start(true)}>
          Preview changes
        </button>
      </div>
      {previewJob && !result && <JobProgress job={preview} />}
      {diff && (
        <div className="stack" role="status" aria-label="Changes">
          <p>
            Rows: {diff.row_count_old ?? "?"} → {diff.row_count_new ?? "?"}
          </p>
          <p>Columns added: {diff.columns_added.map((c) => c.name).join(", ") || "none"}</p>
          <p>Columns removed: {diff.columns_removed.map((c) => c.name).join(", ") || "none"}</p>
          <p>
            Types changed:{" "}
            {diff.type_changes.map((c) => `${c.name} (${c.old_type} → ${c.new_type})`).join(", ") || "none"}
          </p>
          <button type="button" onClick={() => start(false)}>
            Replace the data
          </button>
        </div>
      )}
      {replaceJob && <JobProgress job={replace} />}
      <ErrorNote error={error} />
    </section>
  );
}

/** Who else may read or change a dataset. */
export function Grants({ dataset }: { dataset: Dataset }) {
  const grants = useLoad(() => get<Schemas["Grant"][]>(`/api/datasets/${dataset.id}/grants`), [dataset.id]);
  const users = useLoad(() => get<Schemas["UserResponse"][]>("/api/admin/users").catch(() => []), []);
  const [userId, setUserId] = useState("");
  const [permission, setPermission] = useState("read");
  const [error, setError] = useState<unknown>(null);
  const grant = async () => {
    setError(null);
    try {
      await send("PUT", `/api/datasets/${dataset.id}/grants/${userId}`, { permission });
      setUserId("");
      grants.reload();
    } catch (err) {
      setError(err);
    }
  };
  const revoke = async (id: string) => {
    setError(null);
    try {
      await send("DELETE", `/api/datasets/${dataset.id}/grants/${id}`);
      grants.reload();
    } catch (err) {
      setError(err);
    }
  };
  const list = Array.isArray(grants.value) ? grants.value : [];
  return (
    <section aria-labelledby="grants">
      <h2 id="grants">Access for other people</h2>
      <p className="meta">A restricted dataset is seen by these people; write lets them change it.</p>
      <ul>
        {list.map((g) => (
          <li key={g.user_id}>
            {g.username}: {g.permission} (since {when(g.created_at)}){" "}
            <button type="button" className="link" onClick={() => revoke(g.user_id)} aria-label={`Revoke access of ${g.username}`}>
              Revoke
            </button>
          </li>
        ))}
      </ul>
      {Array.isArray(users.value) && users.value.length > 0 && (
        <div className="row">
          <label className="grow">
            Person
            <select value={userId} onChange={(e) => setUserId(e.target.value)}>
              <option value="">Choose a person…</option>
              {users.value.map((u) => (
                <option key={u.id} value={u.id}>
                  {u.username}
                </option>
              ))}
            </select>
          </label>
          <label>
            Permission
            <select value={permission} onChange={(e) => setPermission(e.target.value)}>
              <option value="read">read</option>
              <option value="write">write</option>
            </select>
          </label>
          <button type="button" disabled={!userId} onClick={grant}>
            Grant access
          </button>
        </div>
      )}
      <ErrorNote error={error ?? grants.error} />
    </section>
  );
}
