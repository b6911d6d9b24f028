import { useState, type FormEvent } from "react";
import { ApiError, client, data } from "../../lib/api";
import { Link, navigate } from "../../lib/router";
import { ErrorNote, LoadFailed, SignedIn, useAction, useLoad, when, useTitle } from "../../components/common";
import { MapView } from "../../components/map/mapview";
import { basemapPlacement, extentOf, identifiedLayers, mapStyle, savedView } from "../../components/map/mapstyle";
import { Legend } from "../../components/map/legend";
import { Thumbnail } from "../../components/extent";

/** A style JSON document (a MapLibre style, such as an exported one) becomes a new map. */
function ImportStyle() {
  const [file, setFile] = useState<File | null>(null);
  const action = useAction();
  const submit = (e: FormEvent) => {
    e.preventDefault();
    if (!file) return;
    action.run(async () => {
      // Its members are the API's to judge: the document leaves a style's open.
      let style: Record<string, never>;
      try {
        style = JSON.parse(await file.text());
      } catch {
        throw new Error(`${file.name} is not a JSON document.`);
      }
      const created = await data(client.POST("/maps/import", { body: style }));
      navigate(`/maps/${created.id}`);
    });
  };
  return (
    <section aria-labelledby="import-style">
      <h2 id="import-style">Import a style</h2>
      <p>A MapLibre style document, such as one exported here, becomes a new map; its layers drawn from this catalog's datasets come with it.</p>
      <form onSubmit={submit} className="row">
        <label className="grow">
          Style JSON file
          <input type="file" accept=".json,application/json" onChange={(e) => setFile(e.target.files?.[0] ?? null)} />
        </label>
        <button type="submit" disabled={!file || action.busy}>
          Import style
        </button>
      </form>
      <ErrorNote error={action.error} />
    </section>
  );
}

export function Maps() {
  useTitle("Maps");
  const maps = useLoad(() => data(client.GET("/maps", { params: { query: { limit: 100 } } })), []);
  const [name, setName] = useState("");
  const action = useAction();
  const create = (e: FormEvent) => {
    e.preventDefault();
    action.run(async () => {
      const created = await data(client.POST("/maps", { body: { name } }));
      navigate(`/maps/${created.id}`);
    });
  };
  return (
    <SignedIn>
      <section>
        <h1>Maps</h1>
        <ErrorNote error={maps.error} />
        <ul className="cards">
          {maps.value?.maps.map((m) => (
            <li key={m.id} className="card">
              <Thumbnail path={`/api/maps/${m.id}/thumbnail.png`} bbox={extentOf(m)} title={m.name} />
              <div>
                <h2>
                  <Link href={`/maps/${m.id}`}>{m.name}</Link>
                </h2>
                <p className="meta">
                  <span>{m.layer_count} layers</span> <span>updated {when(m.updated_at)}</span>
                </p>
              </div>
            </li>
          ))}
        </ul>
        {maps.value?.maps.length === 0 && <p>No map yet.</p>}
        <form onSubmit={create} className="row">
          <label className="grow">
            New map name
            <input value={name} onChange={(e) => setName(e.target.value)} required />
          </label>
          <button type="submit">Create map</button>
        </form>
        <ErrorNote error={action.error} />
        <ImportStyle />
      </section>
    </SignedIn>
  );
}

/** A shared map, for anyone with its link. */
export function SharedMap({ token }: { token: string }) {
  const map = useLoad(() => data(client.GET("/maps/shared/{token}", { params: { path: { token } } })), [token]);
  useTitle(map.value?.name ?? "Shared map");
  if (map.error instanceof ApiError && map.error.status === 410)
    return (
      <section>
        <h1>This link was revoked</h1>
        <p>{map.error.message}</p>
      </section>
    );
  if (map.error) return <LoadFailed error={map.error} />;
  const m = map.value;
  if (!m) return <p className="loading">Loading…</p>;
  const hidden = m.layers.filter((l) => !l.dataset_available).length;
  return (
    <article>
      <h1>{m.name}</h1>
      {m.description && <p className="summary">{m.description}</p>}
      {hidden > 0 && (
        <p className="warning" role="note">
          {hidden === 1 ? "One layer of this map is" : `${hidden} layers of this map are`} not shown: their data is not
          public.
        </p>
      )}
      <MapView
        style={mapStyle(m)}
        bounds={extentOf(m)}
        view={savedView(m)}
        basemap={basemapPlacement(m)}
        identify={identifiedLayers(m)}
        label={`Map ${m.name}`}
      />
      <Legend layers={m.layers} />
    </article>
  );
}
