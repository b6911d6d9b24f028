// The service's health at a glance, drawn from its own Prometheus figures
// (GET /api/metrics), read every few seconds while the screen is open:
// counters become rates between two reads, the latency histogram a 95th
// percentile. Storage and datasets per person come from the accounts'
// usage, as quotas count it.
import { useEffect, useState } from "react";
import { client, data, type User } from "../../lib/api";
import { ApiLink } from "../../components/apilink";
import { ErrorNote, bytes, useLoad } from "../../components/common";
import { AdminScreen } from "./admin";

/** One sample of the text format: a name, its labels and a value. */
type Sample = { name: string; labels: Record<string, string>; value: number };

const SAMPLE = /^([A-Za-z_:][\w:]*)(?:\{(.*)\})?\s+(\S+)/;
const LABEL = /(\w+)="((?:[^"\\]|\\.)*)"/g;

/** The samples of a Prometheus text exposition (comments skipped). */
export function parseMetrics(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split("\n")) {
    const found = SAMPLE.exec(line);
    if (!found || line.startsWith("#")) continue;
    const labels: Record<string, string> = {};
    for (const [, key, value] of (found[2] ?? "").matchAll(LABEL)) labels[key] = value.replace(/\\(.)/g, "$1");
    samples.push({ name: found[1], labels, value: Number(found[3]) });
  }
  return samples;
}

/** The screen's own reads are left out of the request figures they would swell. */
const own = (s: Sample) => s.labels.route === "/api/metrics";

function total(samples: Sample[], name: string, keep: (s: Sample) => boolean = () => true): number {
  return samples.filter((s) => s.name === name && keep(s)).reduce((sum, s) => sum + s.value, 0);
}

/** One read of the figures, at a time. */
type Reading = { at: number; samples: Sample[] };

/** The figures drawn, one point per pair of reads. */
type Point = {
  at: number;
  requests: number;
  errors: number;
  refused: number;
  p95: number | null;
  queued: number;
  running: number;
  waited: number;
  workers: number;
};

/** The 95th percentile of the requests answered between two reads, from
 * the histogram's cumulative buckets (interpolated inside its bucket). */
function percentile95(before: Sample[], after: Sample[]): number | null {
  const buckets = (samples: Sample[]) => {
    const byBound = new Map<number, number>();
    for (const s of samples) {
      if (s.name !== "catalog_http_request_duration_seconds_bucket" || own(s)) continue;
      const bound = s.labels.le === "+Inf" ? Infinity : Number(s.labels.le);
      byBound.set(bound, (byBound.get(bound) ?? 0) + s.value);
    }
    return byBound;
  };
  const was = buckets(before);
  const now = [...buckets(after)].map(([bound, n]) => [bound, n - (was.get(bound) ?? 0)] as const).sort((a, b) => a[0] - b[0]);
  const count = now.length ? now[now.length - 1][1] : 0;
  if (count <= 0) return null;
  const rank = 0.95 * count;
  let lower = 0;
  let below = 0;
  for (const [bound, n] of now) {
    if (n >= rank) {
      if (bound === Infinity) return lower;
      return lower + ((bound - lower) * (rank - below)) / Math.max(n - below, 1);
    }
    lower = bound;
    below = n;
  }
  return lower;
}

function point(before: Reading, after: Reading): Point {
  const seconds = Math.max((after.at - before.at) / 1000, 0.001);
  const rate = (name: string, keep: (s: Sample) => boolean) =>
    Math.max(total(after.samples, name, keep) - total(before.samples, name, keep), 0) / seconds;
  const gauge = (name: string, keep?: (s: Sample) => boolean) => total(after.samples, name, keep);
  return {
    at: after.at,
    requests: rate("catalog_http_requests_total", (s) => !own(s)),
    errors: rate("catalog_http_requests_total", (s) => !own(s) && s.labels.status?.startsWith("5")),
    refused: rate("catalog_http_requests_total", (s) => !own(s) && s.labels.status?.startsWith("4")),
    p95: percentile95(before.samples, after.samples),
    queued: gauge("catalog_jobs", (s) => s.labels.status === "queued"),
    running: gauge("catalog_jobs", (s) => s.labels.status === "running"),
    waited: gauge("catalog_oldest_queued_job_age_seconds"),
    workers: gauge("catalog_workers_live"),
  };
}

/** How often the screen reads the figures, and how many points it keeps (five minutes). */
const EVERY_MS = 5000;
const KEPT = 60;

/** The figures read while the screen is open, as points. */
function usePoints() {
  const [points, setPoints] = useState<Point[]>([]);
  const [error, setError] = useState<unknown>(null);
  useEffect(() => {
    let last: Reading | null = null;
    let stopped = false;
    const read = async () => {
      try {
        const text = await data<string>(client.GET("/metrics", { parseAs: "text" }));
        const reading = { at: Date.now(), samples: parseMetrics(text) };
        if (stopped) return;
        setError(null);
        if (last) {
          const next = point(last, reading);
          setPoints((kept) => [...kept.slice(-(KEPT - 1)), next]);
        }
        last = reading;
      } catch (err) {
        if (!stopped) setError(err);
      }
    };
    void read();
    const timer = window.setInterval(read, EVERY_MS);
    return () => {
      stopped = true;
      window.clearInterval(timer);
    };
  }, []);
  return { points, error };
}

/** A figure's latest value over a small line of its recent values. */
function Chart({ title, values, unit }: { title: string; values: (number | null)[]; unit: (n: number) => string }) {
  const known = values.filter((v): v is number => v !== null);
  const latest = known.length ? known[known.length - 1] : null;
  const top = Math.max(...known, 0) || 1;
  const width = 240;
  const height = 48;
  const step = width / Math.max(KEPT - 1, 1);
  const start = width - (values.length - 1) * step;
  const at = (v: number, i: number): [number, number] => [start + i * step, height - (v / top) * (height - 4) - 2];
  const line = values
    .map((v, i) => (v === null ? null : at(v, i).map((c) => c.toFixed(1)).join(",")))
    .filter(Boolean)
    .join(" ");
  // The latest value's dot: a line needs two reads, a dot shows from the first.
  const end = values[values.length - 1];
  const last = end != null ? at(end, values.length - 1) : null;
  return (
    <li className="card chart">
      <h2>{title}</h2>
      <p className="figure">{latest === null ? "waiting for a second read" : unit(latest)}</p>
      <svg viewBox={`0 0 ${width} ${height}`} width="100%" height={height} role="img" aria-label={`${title}, the last ${values.length} reads, highest ${unit(top)}`}>
        <polyline points={line} fill="none" stroke="var(--accent)" strokeWidth={2} />
        {last && <circle cx={last[0]} cy={last[1]} r={3} fill="var(--accent)" />}
      </svg>
    </li>
  );
}

const perSecond = (n: number) => `${n < 10 ? n.toFixed(2) : Math.round(n)} per second`;
const millis = (seconds: number) => `${Math.round(seconds * 1000)} ms`;
const count = (n: number) => `${Math.round(n)}`;
const age = (seconds: number) => (seconds < 120 ? `${Math.round(seconds)} s` : `${Math.round(seconds / 60)} min`);

/** One bar per account, largest first, for the account's usage `of`. */
function Bars({ title, users, of, unit }: { title: string; users: User[]; of: (u: User) => number; unit: (n: number) => string }) {
  const ranked = [...users].sort((a, b) => of(b) - of(a)).slice(0, 10);
  const top = Math.max(...ranked.map(of), 0) || 1;
  return (
    <li className="card chart">
      <h2>{title}</h2>
      <p className="figure">{unit(users.reduce((sum, u) => sum + of(u), 0))} in all</p>
      <ul className="bars" aria-label={title}>
        {ranked.map((u) => (
          <li key={u.id}>
            <span className="bar-name">{u.username}</span>
            <span className="bar" style={{ width: `${(of(u) / top) * 100}%` }} aria-hidden="true" />
            <span className="bar-value">{unit(of(u))}</span>
          </li>
        ))}
      </ul>
    </li>
  );
}

export function AdminMetrics() {
  const { points, error } = usePoints();
  const users = useLoad(() => data(client.GET("/admin/users")), []);
  const series = (pick: (p: Point) => number | null) => points.map(pick);
  const accounts = users.value ?? [];
  return (
    <AdminScreen title="Metrics">
      <p>
        Read from this API process every {EVERY_MS / 1000} seconds while the screen is open; other API processes count
        their own requests. For history and alerts, scrape <ApiLink path="/api/metrics" open={false}>the same figures</ApiLink> with
        Prometheus.
      </p>
      <ErrorNote error={error ?? users.error} />
      <ul className="cards charts">
        <Chart title="Requests" values={series((p) => p.requests)} unit={perSecond} />
        <Chart title="Server errors (5xx)" values={series((p) => p.errors)} unit={perSecond} />
        <Chart title="Refused requests (4xx)" values={series((p) => p.refused)} unit={perSecond} />
        <Chart title="Latency, 95th percentile" values={series((p) => p.p95)} unit={millis} />
        <Chart title="Jobs waiting" values={series((p) => p.queued)} unit={count} />
        <Chart title="Jobs running" values={series((p) => p.running)} unit={count} />
        <Chart title="Longest wait of a queued job" values={series((p) => p.waited)} unit={age} />
        <Chart title="Workers alive" values={series((p) => p.workers)} unit={count} />
        <Bars title="Storage by person" users={accounts} of={(u) => u.quota_usage?.bytes_used ?? 0} unit={bytes} />
        <Bars title="Datasets by person" users={accounts} of={(u) => u.quota_usage?.dataset_count ?? 0} unit={count} />
      </ul>
    </AdminScreen>
  );
}
