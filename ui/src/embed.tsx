// The embeddable view of a shared map (`/maps/shared/<token>/embed`), the
// one document other sites may frame: it draws the map and nothing else.
// No session, no sign-in, no navigation, no link into the app, so a framing
// page has nothing of the app to trick a click into (docs/web-ui.md,
// threat model, clickjacking). It imports no screen of the app.
import { StrictMode, useEffect, useState } from "react";
import { createRoot } from "react-dom/client";
import { ApiError, client, data, type Schemas } from "./lib/api";
import { MapView } from "./components/map/mapview";
import { basemapPlacement, extentOf, identifiedLayers, mapStyle, savedView } from "./components/map/mapstyle";
import { Legend } from "./components/map/legend";
import "./embed.css";

type MapResponse = Schemas["MapResponse"];

/** The share token: the path is `/maps/shared/<token>/embed`. */
const token = window.location.pathname.split("/")[3] ?? "";

function EmbeddedMap() {
  const [map, setMap] = useState<MapResponse | null>(null);
  const [failure, setFailure] = useState<string | null>(null);
  useEffect(() => {
    data(client.GET("/maps/shared/{token}", { params: { path: { token } } })).then(setMap, (e: unknown) =>
      setFailure(
        e instanceof ApiError && e.status === 410 ? "This map is no longer shared." : "This map could not be shown.",
      ),
    );
  }, []);
  if (failure)
    return (
      <p className="note" role="status">
        {failure}
      </p>
    );
  if (!map)
    return (
      <p className="note" role="status">
        Loading…
      </p>
    );
  return (
    <>
      <MapView
        style={mapStyle(map)}
        bounds={extentOf(map)}
        view={savedView(map)}
        basemap={basemapPlacement(map)}
        identify={identifiedLayers(map)}
        label={`Map ${map.name}`}
      />
      {/* Over a small frame the legend starts folded, so the map stays in view. */}
      <Legend layers={map.layers} collapsible startOpen={window.innerWidth >= 700 && window.innerHeight >= 500} />
    </>
  );
}

createRoot(document.getElementById("embed")!).render(
  <StrictMode>
    <EmbeddedMap />
  </StrictMode>,
);
