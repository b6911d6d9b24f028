// A job's ingest report (`docs/ingest-report.md`): what it did to every
// row it read. Counts, each reason in a sentence, the assumptions it made
// as warnings to act on, the layers it skipped, the rows it shows (by
// reason) and the report as CSV.
import { useState } from "react";
import { client, data, type Schemas } from "../../lib/api";
import { ScrollTable } from "../../components/common";
import { DownloadLink } from "../../components/download";

type Report = Schemas["IngestReport"];
type Example = Report["examples"][number];

/** Each reason: a short name, whether its rows were kept aside, and what it means. */
export const REASONS: Record<string, { name: string; kept: boolean; sentence: string }> = {
  invalid_geometry: {
    name: "Invalid geometry",
    kept: true,
    sentence: "had a geometry that is not valid and could not be repaired into one of its kind.",
  },
  repaired_geometry: {
    name: "Repaired geometry",
    kept: false,
    sentence: "had an invalid geometry that was repaired and loaded; check that the shapes look right.",
  },
  non_finite_coordinate: {
    name: "Coordinate not a number",
    kept: true,
    sentence: "had a coordinate that is not a finite number (NaN or infinity), so no place.",
  },
  coordinate_out_of_range: {
    name: "Coordinate out of range",
    kept: true,
    sentence: "had a coordinate outside the range of its coordinate system: the file's coordinate system may be declared wrong.",
  },
  empty_geometry: { name: "Empty geometry", kept: true, sentence: "had an empty geometry, with no position at all." },
  wrong_geometry_family: {
    name: "Wrong kind of geometry",
    kept: true,
    sentence: "had a geometry of another kind than the layer's (a line in a layer of points, say).",
  },
  value_does_not_fit: {
    name: "Value does not fit",
    kept: true,
    sentence: "had a value that does not fit its column's type (a date that is no real date, say).",
  },
  encoding: {
    name: "Text encoding",
    kept: false,
    sentence: "had text that is not valid in the file's encoding; it was read as Latin-1 and loaded, so check accented letters.",
  },
  duplicate_key: { name: "Duplicate key", kept: true, sentence: "repeated the key of an earlier row." },
};

/** Each assumption's heading; its message says what was assumed and what to do. */
const ASSUMPTIONS: Record<string, string> = {
  crs_assumed_wgs84: "Coordinate system assumed",
  encoding_guessed: "Text encoding guessed",
  geometry_promoted: "Geometries stored as multi-geometries",
  columns_renamed: "Columns renamed",
  csv_types_inferred: "Column types chosen from the CSV's values",
  layers_chosen: "Only the layers asked for were loaded",
  non_spatial_table_skipped: "Tables without geometry skipped",
};

const reasonName = (reason: string) => REASONS[reason]?.name ?? reason.replace(/_/g, " ");
const rows = (n: number) => `${n.toLocaleString()} ${n === 1 ? "row" : "rows"}`;

function Counts({ report }: { report: Report }) {
  const counts: [string, number][] = [
    ["Read", report.rows_read],
    ["Loaded", report.rows_loaded],
    ["Repaired", report.rows_repaired],
    ["Kept aside", report.rows_quarantined],
  ];
  return (
    <dl className="counts" aria-label="Rows">
      {counts.map(([label, n]) => (
        <div key={label} className={label === "Kept aside" && n > 0 ? "count attention" : "count"}>
          <dt>{label}</dt>
          <dd>{n.toLocaleString()}</dd>
        </div>
      ))}
    </dl>
  );
}

/** The rows the report shows, filtered by reason. */
function Examples({ examples, total }: { examples: Example[]; total: number }) {
  const [reason, setReason] = useState("");
  const reasons = [...new Set(examples.map((e) => e.reason as string))];
  const shown = reason ? examples.filter((e) => e.reason === reason) : examples;
  return (
    <section aria-labelledby="examples">
      <h3 id="examples">Rows</h3>
      <p className="meta">
        {examples.length < total
          ? `The first rows of each reason: ${examples.length.toLocaleString()} of ${total.toLocaleString()}.`
          : `Every row with a reason: ${examples.length.toLocaleString()}.`}{" "}
        A row's number is its place in its layer, from 1.
      </p>
      {reasons.length > 1 && (
        <label className="inline-field">
          Show the rows of
          <select value={reason} onChange={(e) => setReason(e.target.value)}>
            <option value="">every reason</option>
            {reasons.map((r) => (
              <option key={r} value={r}>
                {reasonName(r)}
              </option>
            ))}
          </select>
        </label>
      )}
      <ScrollTable label="Rows with a reason" columns={["Reason", "Layer", "Row", "Field", "Value", "Message"]}>
        {shown.map((e, i) => (
          <tr key={i}>
            <td>{reasonName(e.reason)}</td>
            <td className="cell-wrap">{e.layer}</td>
            <td>{e.row ?? ""}</td>
            <td className="cell-wrap">{e.field ?? ""}</td>
            <td className="cell-wrap">{e.value ?? ""}</td>
            <td className="cell-message">{e.message}</td>
          </tr>
        ))}
      </ScrollTable>
      <p role="status" className="meta">
        {reason ? `${rows(shown.length)} of ${reasonName(reason).toLowerCase()} shown.` : ""}
      </p>
    </section>
  );
}

export function ReportView({ jobId, reportUrl, report }: { jobId: string; reportUrl: string; report: Report }) {
  const byReason = Object.entries(report.by_reason).filter(([, n]) => (n ?? 0) > 0) as [string, number][];
  const csv = new URL(reportUrl, window.location.origin);
  csv.searchParams.set("f", "csv");
  return (
    <section aria-labelledby="report">
      <h2 id="report">Ingest report</h2>
      <Counts report={report} />
      {report.assumptions.length > 0 && (
        <section aria-labelledby="assumptions">
          <h3 id="assumptions">Assumptions to check</h3>
          <ul className="plain notes">
            {report.assumptions.map((a, i) => (
              <li key={i} className="warning">
                <strong>{ASSUMPTIONS[a.code] ?? a.code.replace(/_/g, " ")}</strong>
                {a.layer ? ` (layer ${a.layer})` : ""}: {a.message}
              </li>
            ))}
          </ul>
        </section>
      )}
      {byReason.length > 0 ? (
        <section aria-labelledby="reasons">
          <h3 id="reasons">Why rows were repaired or kept aside</h3>
          <ul className="reasons">
            {byReason.map(([reason, n]) => (
              <li key={reason}>
                <strong>{rows(n)}</strong> {REASONS[reason]?.sentence ?? `had the reason “${reasonName(reason)}”.`}{" "}
                <span className="tag">{REASONS[reason]?.kept === false ? "loaded" : "kept aside"}</span>
              </li>
            ))}
          </ul>
        </section>
      ) : (
        <p>Every row read was loaded as it was.</p>
      )}
      {report.skipped.length > 0 && (
        <section aria-labelledby="skipped">
          <h3 id="skipped">Layers not loaded</h3>
          <ul>
            {report.skipped.map((s, i) => (
              <li key={i} className="wrap">
                <strong>{s.layer}</strong>: {s.why}
              </li>
            ))}
          </ul>
        </section>
      )}
      {report.examples.length > 0 && (
        <Examples examples={report.examples} total={byReason.reduce((sum, [, n]) => sum + n, 0)} />
      )}
      <p>
        <DownloadLink
          href={csv.pathname + csv.search}
          name={`job-${jobId}-report.csv`}
          load={() =>
            data<Blob>(client.GET("/jobs/{job_id}/report", { params: { path: { job_id: jobId }, query: { f: "csv" } }, parseAs: "blob" }))
          }
        >
          Download report as CSV
        </DownloadLink>
      </p>
    </section>
  );
}
