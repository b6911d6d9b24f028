// One job: what it read, its status (followed while it runs), its times,
// its error in words, the datasets it made, and its ingest report with a
// map of each dataset's rows kept aside.
import { useEffect } from "react";
import { client, data, type Schemas } from "../../lib/api";
import { Link } from "../../lib/router";
import { ErrorNote, LoadFailed, SignedIn, bytes, useLoad, useTitle, when } from "../../components/common";
import { JobProgress } from "../../components/job";
import { QuarantineMap } from "./quarantinemap";
import { ReportView } from "./report";
import { KINDS, datasetsOf, jobTitle, stepWords } from "./words";

type Job = Schemas["JobView"];
type Dataset = Schemas["Dataset"];

const UNFINISHED = ["queued", "running"];

/** The datasets the job made, each with its record where the caller may still read it. */
function useDatasets(job: Job | null) {
  const ids = job ? datasetsOf(job) : [];
  return useLoad(
    () =>
      Promise.all(
        ids.map((id) =>
          data(client.GET("/datasets/{dataset_id}", { params: { path: { dataset_id: id } } })).then(
            (d): { id: string; dataset: Dataset | null } => ({ id, dataset: d }),
            () => ({ id, dataset: null }),
          ),
        ),
      ),
    [ids.join(","), job?.status],
  );
}

function Report({ job }: { job: Job }) {
  const reportUrl = job.report_url;
  const report = useLoad(
    async () => {
      if (!reportUrl) return null;
      // Asked without `f`, the 200 is the JSON IngestReport (the document also names the CSV of `f=csv`).
      const report = await data(client.GET("/jobs/{job_id}/report", { params: { path: { job_id: job.id } } }));
      return report as Schemas["IngestReport"];
    },
    [job.id, reportUrl, job.status],
  );
  if (!reportUrl) return null;
  return (
    <>
      <ErrorNote error={report.error} />
      {report.value ? <ReportView jobId={job.id} reportUrl={reportUrl} report={report.value} /> : <p className="loading">Loading the report…</p>}
    </>
  );
}

/** How long from `from` to `to`, as people say it. */
function took(from: string, to: string): string {
  const seconds = Math.max(0, (new Date(to).getTime() - new Date(from).getTime()) / 1000);
  if (seconds < 1) return "under a second";
  if (seconds < 90) return `${Math.round(seconds)} s`;
  return `${Math.round(seconds / 60)} min`;
}

/** The steps the job went through, each with its start and how long it took. */
function Steps({ job }: { job: Job }) {
  if (!job.steps.length) return null;
  const running = job.status === "running";
  return (
    <section aria-labelledby="steps">
      <h2 id="steps">Steps</h2>
      <ol className="steps">
        {job.steps.map((s, i) => {
          const next = job.steps[i + 1]?.at ?? job.finished_at;
          const last = i === job.steps.length - 1;
          return (
            <li key={`${s.step}-${s.at}`} aria-current={running && last ? "step" : undefined}>
              <span className="step-name">{stepWords(s.step)}</span>{" "}
              <span className="meta">
                from {new Date(s.at).toLocaleTimeString()}
                {next ? `, ${took(s.at, next)}` : running ? ", under way" : ""}
              </span>
            </li>
          );
        })}
      </ol>
    </section>
  );
}

function JobDetails({ job }: { job: Job }) {
  const made = useDatasets(job);
  const kept = (made.value ?? []).filter((m) => (m.dataset?.quarantined_count ?? 0) > 0);
  return (
    <article className="job">
      <h1>{jobTitle(job)}</h1>
      <dl className="facts">
        <dt>Kind</dt>
        <dd>{KINDS[job.kind] ?? job.kind}</dd>
        {job.source && (
          <>
            <dt>Source</dt>
            <dd className="wrap">{job.source}</dd>
          </>
        )}
        {job.file_bytes != null && (
          <>
            <dt>File size</dt>
            <dd>{bytes(job.file_bytes)}</dd>
          </>
        )}
        <dt>Sent by</dt>
        <dd>{job.owner ?? "an account since removed"}</dd>
        <dt>Status</dt>
        <dd aria-live="polite">
          <JobProgress job={job} showError={false} />
        </dd>
        <dt>Created</dt>
        <dd>{when(job.created_at)}</dd>
        {job.started_at && (
          <>
            <dt>Started</dt>
            <dd>{when(job.started_at)}</dd>
          </>
        )}
        {job.finished_at && (
          <>
            <dt>Finished</dt>
            <dd>{when(job.finished_at)}</dd>
          </>
        )}
        {job.next_attempt_at && (
          <>
            <dt>Runs again</dt>
            <dd>
              {when(job.next_attempt_at)}
              {job.last_error ? ` (the last try failed: ${job.last_error})` : ""}
            </dd>
          </>
        )}
      </dl>
      <Steps job={job} />
      {job.status === "failed" && job.error && (
        <div className="error-box" role="alert">
          <h2>Why it failed</h2>
          <p className="wrap">{job.error.detail || job.error.title}</p>
        </div>
      )}
      {datasetsOf(job).length > 0 && (
        <section aria-labelledby="made">
          <h2 id="made">{datasetsOf(job).length === 1 ? "Dataset" : "Datasets"}</h2>
          <ErrorNote error={made.error} />
          <ul className="link-list">
            {(made.value ?? datasetsOf(job).map((id) => ({ id, dataset: null }))).map((m, n, all) => (
              <li key={m.id}>
                <Link href={`/datasets/${m.id}`}>{m.dataset?.title ?? (all.length > 1 ? `Dataset ${n + 1}` : "The dataset")}</Link>
                {m.dataset && m.dataset.quarantined_count > 0 && (
                  <span className="tag">
                    {m.dataset.quarantined_count.toLocaleString()} {m.dataset.quarantined_count === 1 ? "row" : "rows"} kept aside
                  </span>
                )}
              </li>
            ))}
          </ul>
        </section>
      )}
      <Report job={job} />
      {kept.length > 0 && (
        <section aria-labelledby="kept">
          <h2 id="kept">Rows kept aside</h2>
          {kept.map((m) => (
            <QuarantineMap key={m.id} datasetId={m.id} title={m.dataset?.title ?? m.id} count={m.dataset?.quarantined_count ?? 0} />
          ))}
        </section>
      )}
      <p>
        <Link href="/jobs">Back to the jobs</Link>
      </p>
    </article>
  );
}

/** A job's page, refreshed every 1.5 s while it is queued or running. */
export function JobPage({ id }: { id: string }) {
  const job = useLoad(() => data(client.GET("/jobs/{job_id}", { params: { path: { job_id: id } } })), [id]);
  const unfinished = !!job.value && UNFINISHED.includes(job.value.status);
  useEffect(() => {
    if (!unfinished) return;
    const timer = setInterval(job.reload, 1500);
    return () => clearInterval(timer);
  }, [unfinished, job.reload]);
  useTitle(job.value ? jobTitle(job.value) : "Job");
  return (
    <SignedIn>
      {job.value ? (
        <>
          {/* A failed refresh leaves the job as last seen, with the problem. */}
          <ErrorNote error={job.error} />
          <JobDetails job={job.value} />
        </>
      ) : job.error ? (
        <LoadFailed error={job.error} />
      ) : (
        <p className="loading">Loading…</p>
      )}
    </SignedIn>
  );
}
