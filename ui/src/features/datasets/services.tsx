// Remote map services as sources: a layer of an OGC API Features server,
// an ArcGIS feature service or a WFS 2.0 server, imported as a new dataset
// or pulled again into an existing one after a preview of what changes.
import { useEffect, useState, type FormEvent } from "react";
import { client, data, type Schemas } from "../../lib/api";
import { Link } from "../../lib/router";
import { ErrorNote, useAction } from "../../components/common";
import { JobProgress, useJob } from "../../components/job";
import { PreviewChanges, type Preview } from "./reupload";

/** What the import, preview and reupload routes all take of a service. */
type ServiceRequest = Omit<Schemas["ServiceReupload"], "preview">;

const TYPES: [string, string, string][] = [
  ["ogcapi_features", "OGC API Features", "Collection id"],
  ["arcgis_featureserver", "ArcGIS feature service", "Layer name"],
  ["wfs", "WFS 2.0", "Feature type name"],
];

const EMPTY = { url: "", service_type: "ogcapi_features", layer_name: "", layer_id: "", token: "" };

/** The fields that name a service's layer, and the request they make. */
function useServiceFields() {
  const [fields, setFields] = useState(EMPTY);
  const field = (name: keyof typeof EMPTY) => ({
    value: fields[name],
    onChange: (e: { target: { value: string } }) => setFields({ ...fields, [name]: e.target.value }),
  });
  const request: ServiceRequest = {
    url: fields.url.trim(),
    service_type: fields.service_type as ServiceRequest["service_type"],
    layer_name: fields.layer_name.trim(),
    layer_id: fields.service_type === "arcgis_featureserver" && fields.layer_id ? Number(fields.layer_id) : undefined,
    token: fields.token || undefined,
  };
  const layerLabel = TYPES.find(([value]) => value === fields.service_type)?.[2] ?? "Layer";
  const inputs = (
    <>
      <label>
        Service URL
        <input type="url" {...field("url")} required />
      </label>
      <label>
        Service type
        <select {...field("service_type")}>
          {TYPES.map(([value, label]) => (
            <option key={value} value={value}>
              {label}
            </option>
          ))}
        </select>
      </label>
      <label>
        {layerLabel}
        <input {...field("layer_name")} required />
      </label>
      {fields.service_type === "arcgis_featureserver" && (
        <label>
          ArcGIS layer number
          <input type="number" min={0} step={1} {...field("layer_id")} />
        </label>
      )}
      <label>
        Access token (if the service needs one)
        <input type="password" {...field("token")} autoComplete="off" />
      </label>
    </>
  );
  return { request, inputs };
}

/** A remote layer becomes a new dataset, followed until it is ready. */
export function ImportService() {
  const service = useServiceFields();
  const [title, setTitle] = useState("");
  const [jobId, setJobId] = useState<string>();
  const action = useAction();
  const job = useJob(jobId);
  const submit = (e: FormEvent) => {
    e.preventDefault();
    action.run(async () => {
      const body = { ...service.request, layer_title: title.trim() || undefined };
      setJobId((await data(client.POST("/datasets/import-service", { body }))).job_id);
    });
  };
  const dataset = job?.status === "succeeded" ? (job.dataset_id ?? job.dataset_ids[0]) : undefined;
  return (
    <form onSubmit={submit} className="stack" aria-labelledby="import-service">
      <h2 id="import-service">Import from a map service</h2>
      {service.inputs}
      <label>
        Title of the new dataset (default: the layer's name)
        <input value={title} onChange={(e) => setTitle(e.target.value)} />
      </label>
      <button type="submit" disabled={action.busy}>
        Import the layer
      </button>
      <ErrorNote error={action.error} />
      {jobId && <JobProgress job={job} />}
      {dataset && <Link href={`/datasets/${dataset}`}>Open the imported dataset</Link>}
    </form>
  );
}

/** New data for a dataset from a service: first what would change, then the replacement. */
export function ServiceReupload({ dataset, onReplaced }: { dataset: Schemas["Dataset"]; onReplaced: () => void }) {
  const service = useServiceFields();
  const path = { dataset_id: dataset.id };
  // The preview and the request it answered: the replacement pulls what was previewed.
  const [preview, setPreview] = useState<{ request: ServiceRequest; changes: Preview } | null>(null);
  const [replaceJob, setReplaceJob] = useState<string>();
  const action = useAction();
  const replace = useJob(replaceJob);
  const compare = (e: FormEvent) => {
    e.preventDefault();
    setPreview(null);
    // The API waits for a worker to pull and compare, up to two minutes.
    const request = service.request;
    action.run(async () =>
      setPreview({
        request,
        changes: await data<Preview>(
          client.POST("/datasets/{dataset_id}/reupload/service/preview", { params: { path }, body: request }),
        ),
      }),
    );
  };
  const replaceData = (request: ServiceRequest) =>
    action.run(async () =>
      setReplaceJob(
        (await data(client.POST("/datasets/{dataset_id}/reupload/service", { params: { path }, body: request }))).job_id,
      ),
    );
  const replaced = replace?.status === "succeeded";
  useEffect(() => {
    if (!replaced) return;
    setReplaceJob(undefined);
    setPreview(null);
    onReplaced();
  }, [replaced, onReplaced]);
  return (
    <section aria-labelledby="reupload-service">
      <h2 id="reupload-service">Replace from a map service</h2>
      <form onSubmit={compare} className="stack">
        {service.inputs}
        <button type="submit" disabled={action.busy}>
          {action.busy && !preview ? "Comparing…" : "Preview changes from the service"}
        </button>
      </form>
      {preview && (
        <PreviewChanges preview={preview.changes} label="Changes from the service">
          <button type="button" onClick={() => replaceData(preview.request)} disabled={!!replaceJob}>
            Replace with the service's data
          </button>
        </PreviewChanges>
      )}
      {replaceJob && <JobProgress job={replace} />}
      <ErrorNote error={action.error} />
    </section>
  );
}
