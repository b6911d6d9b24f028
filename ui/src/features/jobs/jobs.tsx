import { useEffect } from "react";
import { client, data } from "../../lib/api";
import { Link } from "../../lib/router";
import { ErrorNote, ScrollTable, SignedIn, useLoad, when, useTitle } from "../../components/common";
import { JobProgress } from "../../components/job";
import { KINDS, datasetsOf, jobTitle, shortSource, startOf } from "./words";

/** The caller's jobs (every job for admins), refreshed while any runs. */
export function Jobs() {
  useTitle("Jobs");
  const jobs = useLoad(() => data(client.GET("/jobs", { params: { query: { limit: 50 } } })), []);
  const running = jobs.value?.jobs.some((j) => j.status === "queued" || j.status === "running");
  useEffect(() => {
    if (!running) return;
    const timer = setInterval(jobs.reload, 1500);
    return () => clearInterval(timer);
  }, [running, jobs.reload]);
  const cancel = async (id: string) => {
    await client.DELETE("/jobs/{job_id}", { params: { path: { job_id: id } } }).catch(() => undefined);
    jobs.reload();
  };
  return (
    <SignedIn>
      <section>
        <h1>Jobs</h1>
        <ErrorNote error={jobs.error} />
        <ScrollTable label="Jobs table" columns={["Kind", "File", "Status", "Created", "Dataset", { hidden: "Actions" }]}>
          {jobs.value?.jobs.map((j) => (
            <tr key={j.id}>
              <td>
                <Link href={`/jobs/${j.id}`} aria-label={`Open the job: ${jobTitle(j)}, created ${when(j.created_at)}`}>
                  {KINDS[j.kind] ?? j.kind}
                </Link>
              </td>
              <td className="cell-wrap">{j.source && <span title={j.source}>{shortSource(j.source)}</span>}</td>
              <td className="cell-status">
                <JobProgress job={j} showError={false} />
                {j.error?.detail && (
                  <span className="error job-error" title={j.error.detail}>
                    {startOf(j.error.detail)}
                  </span>
                )}
              </td>
              <td>{when(j.created_at)}</td>
              <td>
                {/* Every dataset the job made (a file of several layers makes several). */}
                {datasetsOf(j).map((id, n, all) => (
                  <Link key={id} href={`/datasets/${id}`} aria-label={`Open dataset ${n + 1} of ${all.length} of this ${j.kind} job`} className="dataset-link">
                    {all.length > 1 ? `dataset ${n + 1}` : "open"}
                  </Link>
                ))}
              </td>
              <td>
                {(j.status === "queued" || j.status === "running") && (
                  <button type="button" onClick={() => cancel(j.id)}>
                    Cancel
                  </button>
                )}
              </td>
            </tr>
          ))}
        </ScrollTable>
      </section>
    </SignedIn>
  );
}
