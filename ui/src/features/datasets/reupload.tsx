import { useEffect, useState, type FormEvent, type ReactNode } from "react";
import { client, data, upload, type Schemas } from "../../lib/api";
import { isAdmin, useSession } from "../../lib/session";
import { ErrorNote, ScrollTable, cellText, useAction, useLoad, when } from "../../components/common";
import { JobProgress, useJob } from "../../components/job";

type Dataset = Schemas["Dataset"];
type Column = Schemas["ColumnInfo"];
/** The reupload preview (the specification's shape; the API's document leaves it open). */
export type Preview = {
  feature_count?: number | null;
  geometry_type?: string;
  sample_rows?: Record<string, unknown>[];
  schema_diff: {
    columns_added: Column[];
    columns_removed: Column[];
    type_changes: { name: string; old_type: string; new_type: string }[];
    row_count_old?: number | null;
    row_count_new?: number | null;
  };
};

/** What new data would change: rows and columns; `children` act on it. */
export function PreviewChanges({ preview, label, children }: { preview: Preview; label: string; children: ReactNode }) {
  const diff = preview.schema_diff;
  return (
    <div className="stack changes" role="status" aria-label={label}>
      <p>
        Rows: {diff.row_count_old ?? "?"} → {diff.row_count_new ?? "?"}
      </p>
      <p>Columns added: {diff.columns_added.map((c) => c.name).join(", ") || "none"}</p>
      <p>Columns removed: {diff.columns_removed.map((c) => c.name).join(", ") || "none"}</p>
      <p>
        Types changed: {diff.type_changes.map((c) => `${c.name} (${c.old_type} → ${c.new_type})`).join(", ") || "none"}
      </p>
      {!!preview.sample_rows?.length && <SampleRows rows={preview.sample_rows} label={`${label}: first rows`} />}
      {children}
    </div>
  );
}

const SAMPLE_ROWS = 3;

/** The first rows of the new data, values shown as text. */
function SampleRows({ rows, label }: { rows: Record<string, unknown>[]; label: string }) {
  const columns = Object.keys(rows[0]);
  return (
    <ScrollTable label={label} columns={columns}>
      {rows.slice(0, SAMPLE_ROWS).map((row, i) => (
        <tr key={i}>
          {columns.map((c) => (
            <td key={c}>{cellText(row[c])}</td>
          ))}
        </tr>
      ))}
    </ScrollTable>
  );
}

/** New data for a dataset: first a preview of what changes, then the replacement. */
export function Reupload({ dataset, onReplaced }: { dataset: Dataset; onReplaced: () => void }) {
  const [file, setFile] = useState<File | null>(null);
  const [previewJob, setPreviewJob] = useState<string>();
  const [replaceJob, setReplaceJob] = useState<string>();
  const action = useAction();
  const preview = useJob(previewJob);
  const replace = useJob(replaceJob);
  const result = preview?.status === "succeeded" ? (preview.result as unknown as Preview) : null;

  const start = (previewOnly: boolean) => {
    if (!file) return;
    const form = new FormData();
    form.append("file", file);
    if (previewOnly) form.append("preview", "true");
    action.run(async () => {
      const accepted = await upload(`/api/datasets/${dataset.id}/reupload`, form, () => undefined);
      if (previewOnly) setPreviewJob(accepted.job_id);
      else setReplaceJob(accepted.job_id);
    });
  };
  const replaced = replace?.status === "succeeded";
  useEffect(() => {
    if (!replaced) return;
    setReplaceJob(undefined);
    setPreviewJob(undefined);
    setFile(null);
    onReplaced();
  }, [replaced, onReplaced]);
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
      {result && (
        <PreviewChanges preview={result} label="Changes">
          <button type="button" onClick={() => start(false)}>
            Replace the data
          </button>
        </PreviewChanges>
      )}
      {replaceJob && <JobProgress job={replace} />}
      <ErrorNote error={action.error} />
    </section>
  );
}

/** Who else may read or change a dataset. Owners name the person by
 * username (only admins may list accounts); admins get the names offered. */
export function Grants({ dataset }: { dataset: Dataset }) {
  const { user } = useSession();
  const path = { dataset_id: dataset.id };
  const grants = useLoad(() => data(client.GET("/datasets/{dataset_id}/grants", { params: { path } })), [dataset.id]);
  const known = useLoad(() => (isAdmin(user) ? data(client.GET("/admin/users")) : Promise.resolve([])), [user?.id]);
  const [username, setUsername] = useState("");
  const [permission, setPermission] = useState<Schemas["Permission"]>("read");
  const action = useAction();
  const grant = (e: FormEvent) => {
    e.preventDefault();
    action.run(async () => {
      await client.POST("/datasets/{dataset_id}/grants", { params: { path }, body: { username: username.trim(), permission } });
      setUsername("");
      grants.reload();
    });
  };
  const revoke = (id: string) =>
    action.run(async () => {
      await client.DELETE("/datasets/{dataset_id}/grants/{user_id}", { params: { path: { ...path, user_id: id } } });
      grants.reload();
    });
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
      <form className="row" onSubmit={grant}>
        <label className="grow">
          Username of the person
          <input value={username} onChange={(e) => setUsername(e.target.value)} list="known-users" autoComplete="off" required />
        </label>
        <datalist id="known-users">
          {known.value?.map((u) => <option key={u.id} value={u.username} />)}
        </datalist>
        <label>
          Permission
          <select value={permission} onChange={(e) => setPermission(e.target.value as typeof permission)}>
            <option value="read">read</option>
            <option value="write">write</option>
          </select>
        </label>
        <button type="submit" disabled={action.busy}>
          Grant access
        </button>
      </form>
      <ErrorNote error={action.error ?? grants.error} />
    </section>
  );
}
