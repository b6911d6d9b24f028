import { useState, type KeyboardEvent, type ReactNode } from "react";
import { createPortal } from "react-dom";
import { ApiError, client, data, type Schemas } from "../../lib/api";
import { Link } from "../../lib/router";
import { ErrorNote, ScrollTable, cellText, useAction, useLoad, useNarrow, when } from "../../components/common";

type Dataset = Schemas["Dataset"];
type Column = Schemas["ColumnInfo"];
type Feature = { id?: string | number; properties: Record<string, unknown> };

const NUMERIC = ["integer", "bigint", "smallint", "double precision", "real", "numeric"];

/** What a cell's text becomes: a number for a numeric column, null when empty. */
function valueOf(text: string, column: Column): unknown {
  if (text.trim() === "") return null;
  if (NUMERIC.includes(column.type ?? "")) {
    const n = Number(text);
    return Number.isFinite(n) ? n : text;
  }
  return text;
}

/** A problem as people read it; a stale ETag says what to do. */
function explain(error: unknown): unknown {
  if (error instanceof ApiError && error.status === 412) {
    return new Error("Someone changed this feature since you opened it; its row now shows their change. Edit it again.");
  }
  return error;
}

/** One row of the attribute table for a writer: its values, or inputs
 * while it is edited. The feature's ETag is read when editing starts and
 * sent back with the change, so nobody's change is overwritten. */
export function EditableRow({
  dataset,
  columns,
  feature,
  onChanged,
  lead,
}: {
  dataset: Dataset;
  columns: Column[];
  feature: Feature;
  onChanged: () => void;
  /** The row's first cell (its zoom control). */
  lead?: ReactNode;
}) {
  const [editing, setEditing] = useState<{ etag: string; values: Record<string, string> } | null>(null);
  const action = useAction();
  const item = { path: { collectionId: dataset.id, featureId: String(feature.id) } };
  /** The feature with its entity tag, which goes back in `If-Match`. */
  const tagged = async () => {
    const { data: value, response } = await client.GET("/collections/{collectionId}/items/{featureId}", { params: item });
    return { value: value as Feature, etag: response.headers.get("ETag") ?? "" };
  };
  const start = () =>
    action.run(async () => {
      const { value, etag } = await tagged();
      setEditing({ etag, values: Object.fromEntries(columns.map((c) => [c.name, cellText(value.properties[c.name])])) });
    });
  const save = () =>
    action.run(async () => {
      if (!editing) return;
      const changed = Object.fromEntries(
        columns
          .filter((c) => editing.values[c.name] !== cellText(feature.properties[c.name]))
          .map((c) => [c.name, valueOf(editing.values[c.name], c)]),
      );
      try {
        await client.PATCH("/collections/{collectionId}/items/{featureId}", {
          params: { ...item, header: { "If-Match": editing.etag } },
          // A merge patch, whose members the document leaves untyped (never).
          body: { properties: changed as never },
        });
      } catch (e) {
        setEditing(null);
        onChanged();
        throw explain(e);
      }
      setEditing(null);
      onChanged();
    });
  const remove = () => {
    if (!window.confirm(`Delete feature ${feature.id}? The dataset's history keeps it.`)) return;
    action.run(async () => {
      const { etag } = await tagged();
      await client.DELETE("/collections/{collectionId}/items/{featureId}", { params: { ...item, header: { "If-Match": etag } } });
      onChanged();
    });
  };
  const cancel = () => setEditing(null);
  // As in a spreadsheet: Enter keeps the row's values, Escape leaves them.
  const keys = (e: KeyboardEvent) => {
    if (e.key === "Enter") {
      e.preventDefault();
      save();
    } else if (e.key === "Escape") {
      e.preventDefault();
      cancel();
    }
  };
  // On a phone the row is edited in a sheet over the page, one field a line, since a row of inputs runs off screen.
  const narrow = useNarrow();
  const input = (c: Column, focused: boolean) => (
    <input
      aria-label={`${c.name} of feature ${feature.id}`}
      value={editing?.values[c.name] ?? ""}
      autoFocus={focused}
      onKeyDown={keys}
      onChange={(e) => editing && setEditing({ ...editing, values: { ...editing.values, [c.name]: e.target.value } })}
    />
  );
  const actions = (
    <>
      <button type="button" onClick={save} disabled={action.busy}>
        Save row
      </button>
      <button type="button" onClick={cancel}>
        Cancel
      </button>
    </>
  );
  return (
    <tr className={editing ? "editing" : undefined}>
      {lead}
      {columns.map((c, i) => (
        <td key={c.name}>{editing && !narrow ? input(c, i === 0) : cellText(feature.properties?.[c.name])}</td>
      ))}
      <td className="row-actions">
        {editing && narrow ? (
          // On the page's body, above the table's sticky cells (a cell's stacking would keep it under them).
          createPortal(
            <>
              <div className="sheet-backdrop" onClick={cancel} aria-hidden="true" />
              <div className="sheet" role="dialog" aria-modal="true" aria-labelledby={`sheet-${feature.id}`}>
                <h3 id={`sheet-${feature.id}`}>Edit feature {feature.id}</h3>
                <div className="sheet-fields">
                  {columns.map((c, i) => (
                    <label key={c.name}>
                      {c.name}
                      {input(c, i === 0)}
                    </label>
                  ))}
                </div>
                <div className="row">{actions}</div>
                <ErrorNote error={action.error} />
              </div>
            </>,
            document.body,
          )
        ) : editing ? (
          actions
        ) : (
          <>
            <button type="button" onClick={start} aria-label={`Edit feature ${feature.id}`}>
              Edit
            </button>
            <button type="button" className="danger" onClick={remove} aria-label={`Delete feature ${feature.id}`}>
              Delete
            </button>
          </>
        )}
        {!(editing && narrow) && <ErrorNote error={action.error} />}
      </td>
    </tr>
  );
}

type Changes = Schemas["ChangeList"];

/** What a change did to a feature, in a few words. */
function summary(change: Changes["changes"][number]): string {
  const before = (change.before as { properties?: Record<string, unknown> } | null)?.properties;
  const after = (change.after as { properties?: Record<string, unknown> } | null)?.properties;
  if (!before) return "added";
  if (!after) return "deleted";
  const changed = Object.keys({ ...before, ...after }).filter(
    (k) => JSON.stringify(before[k]) !== JSON.stringify(after[k]),
  );
  return changed.length ? `changed ${changed.join(", ")}` : "changed its geometry";
}

/** A dataset's versions (each load, reupload, edit and restore) with a
 * restore for each past one, and the latest changes: who changed which
 * feature when. */
export function History({ dataset, onRestored }: { dataset: Dataset; onRestored: () => void }) {
  const path = { dataset_id: dataset.id };
  const versions = useLoad(
    () => data(client.GET("/datasets/{dataset_id}/versions", { params: { path, query: { limit: 20 } } })),
    [dataset.id, dataset.updated_at],
  );
  const changes = useLoad(
    () => data(client.GET("/datasets/{dataset_id}/changes", { params: { path, query: { limit: 10 } } })),
    [dataset.id, dataset.updated_at],
  );
  const action = useAction();
  const [restoring, setRestoring] = useState<string | null>(null);
  const restore = (version: number) => {
    if (!window.confirm(`Bring back version ${version}? The data now becomes a version you can restore too.`)) return;
    action.run(async () => {
      const job = await data(
        client.POST("/datasets/{dataset_id}/versions/{version}/restore", { params: { path: { ...path, version } } }),
      );
      setRestoring(job.job_id);
      for (;;) {
        const state = await data(client.GET("/jobs/{job_id}", { params: { path: { job_id: job.job_id } } }));
        if (state.status === "failed" || state.status === "cancelled") throw new Error(`The restore ${state.status}.`);
        if (state.status === "succeeded") break;
        await new Promise((r) => setTimeout(r, 500));
      }
      setRestoring(null);
      onRestored();
    });
  };
  return (
    <section aria-labelledby="history">
      <h2 id="history">History</h2>
      <ErrorNote error={versions.error ?? changes.error ?? action.error} />
      {restoring && (
        <p role="status">
          Restoring… <Link href={`/jobs/${restoring}`}>the job</Link>
        </p>
      )}
      <ScrollTable label="Versions" columns={["Version", "What", "Who", "When", "Features", { hidden: "Restore" }]}>
        {versions.value?.versions.map((v) => (
          <tr key={v.version}>
            <th scope="row">{v.version}</th>
            <td>{v.restored_from ? `restore of ${v.restored_from}` : v.kind}</td>
            <td>{v.created_by ?? "—"}</td>
            <td>{when(v.created_at)}</td>
            <td>{v.feature_count.toLocaleString()}</td>
            <td>
              {v.current ? (
                "current"
              ) : (
                <button type="button" onClick={() => restore(v.version)} disabled={action.busy}>
                  Restore version {v.version}
                </button>
              )}
            </td>
          </tr>
        ))}
      </ScrollTable>
      <h3>Latest changes</h3>
      {changes.value && changes.value.changes.length === 0 && <p>No feature has been edited.</p>}
      <ul className="changes">
        {changes.value?.changes.map((c) => (
          <li key={`${c.version}-${c.feature_id}`}>
            Feature {c.feature_id} {summary(c)} by {c.changed_by ?? "someone"}, {when(c.changed_at)} (version {c.version})
          </li>
        ))}
      </ul>
    </section>
  );
}
