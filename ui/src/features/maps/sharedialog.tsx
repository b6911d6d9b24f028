// Sharing a map: the links that open it, to create, copy and revoke, and a
// warning before sharing layers whose data link holders may not see (a
// shared map is read anonymously: only public datasets draw).
import { client, data, type Schemas } from "../../lib/api";
import { ErrorNote, useAction, useLoad, when } from "../../components/common";

type MapResponse = Schemas["MapResponse"];
type MapLayer = Schemas["MapLayerResponse"];

/** Text made safe inside a double-quoted HTML attribute. */
function attribute(text: string): string {
  return text.replace(/&/g, "&amp;").replace(/"/g, "&quot;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}

export function ShareDialog({
  map,
  layers,
  dirty,
  onVisibility,
  onClose,
}: {
  map: MapResponse;
  layers: MapLayer[];
  /** The editor holds changes not saved yet, which links do not show. */
  dirty: boolean;
  /** A layer's dataset was made public. */
  onVisibility: (datasetId: string, visibility: string) => void;
  onClose: () => void;
}) {
  const shares = useLoad(() => data(client.GET("/maps/{map_id}/shares", { params: { path: { map_id: map.id } } })), [map.id]);
  const action = useAction();
  const hidden = layers.filter((l) => l.dataset_available && l.dataset_visibility !== "public");
  const create = () =>
    action.run(async () => {
      await client.POST("/maps/{map_id}/shares", { params: { path: { map_id: map.id } } });
      shares.reload();
    });
  const revoke = (token: string) =>
    action.run(async () => {
      await client.DELETE("/maps/{map_id}/shares/{token}", { params: { path: { map_id: map.id, token } } });
      shares.reload();
    });
  const publish = (layer: MapLayer) => {
    if (!window.confirm(`Make “${layer.dataset_name}” public? Anyone will be able to read and download it.`)) return;
    action.run(async () => {
      await client.PATCH("/datasets/{dataset_id}", { params: { path: { dataset_id: layer.dataset_id } }, body: { visibility: "public" } });
      onVisibility(layer.dataset_id, "public");
    });
  };
  const newest = shares.value?.shares[0];
  return (
    <section className="dialog" aria-labelledby="share-title" role="region">
      <h2 id="share-title">Share “{map.name}”</h2>
      {hidden.length > 0 && (
        <div className="warning" role="alert">
          <p>
            People with a link see only public data. {hidden.length === 1 ? "This layer" : "These layers"} will not show
            for them:
          </p>
          <ul>
            {hidden.map((l) => (
              <li key={l.id}>
                “{l.dataset_name}” ({l.dataset_visibility}){" "}
                <button type="button" className="link" onClick={() => publish(l)} disabled={action.busy}>
                  Make “{l.dataset_name}” public
                </button>
              </li>
            ))}
          </ul>
        </div>
      )}
      <p>Anyone with one of these links can view the map, as it is saved; revoke a link to close it.</p>
      {dirty && <p className="warning">Links show the map as last saved: save it to share your latest changes.</p>}
      <ErrorNote error={shares.error} />
      {shares.value && shares.value.shares.length === 0 && <p>No link yet.</p>}
      <ul className="link-list" aria-label="Share links">
        {shares.value?.shares.map((s) => (
          <li key={s.token}>
            <a href={s.url}>{s.url}</a>
            <span className="meta">created {when(s.created_at)}</span>
            <button type="button" onClick={() => revoke(s.token)} aria-label={`Revoke link created ${when(s.created_at)}`} disabled={action.busy}>
              Revoke
            </button>
          </li>
        ))}
      </ul>
      {newest && (
        <label>
          Embed snippet
          <textarea
            readOnly
            rows={2}
            value={`<iframe src="${newest.url}/embed" width="800" height="500" title="${attribute(map.name)}"></iframe>`}
          />
        </label>
      )}
      <div className="row actions">
        <button type="button" onClick={create} disabled={action.busy}>
          Create a link
        </button>
        <button type="button" className="link" onClick={onClose}>
          Close sharing
        </button>
      </div>
      <ErrorNote error={action.error} />
    </section>
  );
}
