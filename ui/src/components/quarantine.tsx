// The rows an ingest kept aside from a dataset (`docs/ingest-report.md`):
// GeoJSON whose features hold the row's attributes and why it was kept
// aside (reason, message, field, value, source_row, fid); a geometry is
// null where it has no position JSON can hold.
import type { ReactNode } from "react";
import { API_BASE, client, data } from "../lib/api";
import { DownloadLink } from "./download";

export type QuarantinedRow = {
  type: "Feature";
  id?: string | number;
  geometry: { type: string; coordinates?: unknown; geometries?: unknown[] } | null;
  properties: Record<string, unknown>;
};
export type Quarantine = { type: "FeatureCollection"; features: QuarantinedRow[] };

/** The dataset's quarantined rows, the first `limit` of the source (all without). */
export async function quarantinedRows(datasetId: string, limit?: number): Promise<Quarantine> {
  // GeoJSON, whose features the document leaves open.
  const rows = await data(client.GET("/datasets/{dataset_id}/quarantine", { params: { path: { dataset_id: datasetId }, query: { limit } } }));
  return rows as Quarantine;
}

/** A link that saves every quarantined row of the dataset as GeoJSON. */
export function QuarantineLink({ datasetId, children }: { datasetId: string; children: ReactNode }) {
  return (
    <DownloadLink
      href={`${API_BASE}/datasets/${datasetId}/quarantine`}
      name={`quarantine-${datasetId}.geojson`}
      load={() =>
        data<Blob>(client.GET("/datasets/{dataset_id}/quarantine", { params: { path: { dataset_id: datasetId } }, parseAs: "blob" }))
      }
    >
      {children}
    </DownloadLink>
  );
}
