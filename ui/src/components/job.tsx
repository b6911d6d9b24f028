// A job followed from the page that started it: its status, step and progress.
import { useEffect, useState } from "react";
import { client, data, type Schemas } from "../lib/api";

type Job = Schemas["JobView"];

const FINISHED = ["succeeded", "failed", "cancelled"];

/** A job followed until it finishes: its step and how much is done. */
export function useJob(jobId: string | undefined): Job | null {
  const [job, setJob] = useState<Job | null>(null);
  useEffect(() => {
    setJob(null);
    if (!jobId) return;
    let stop = false;
    const poll = async () => {
      while (!stop) {
        try {
          const seen = await data(client.GET("/jobs/{job_id}", { params: { path: { job_id: jobId } } }));
          setJob(seen);
          if (FINISHED.includes(seen.status)) return;
        } catch {
          // A blip: try again on the next round.
        }
        await new Promise((r) => setTimeout(r, 700));
      }
    };
    poll();
    return () => {
      stop = true;
    };
  }, [jobId]);
  return job;
}

/** A job's status, step and progress; its error too, unless the page says it elsewhere (`showError`). */
export function JobProgress({ job, showError = true }: { job: Job | null; showError?: boolean }) {
  if (!job) return <span>queued</span>;
  const p = job.progress;
  const percent = p?.total ? Math.round((100 * p.done) / p.total) : null;
  return (
    <span className="progress-text">
      {job.status}
      {job.step && job.status === "running" ? ` · ${job.step}` : ""}
      {p && job.status === "running" ? ` · ${p.done.toLocaleString()}${p.total ? ` of ${p.total.toLocaleString()}` : ""}` : ""}
      {percent !== null && job.status === "running" && (
        <progress max={100} value={percent} aria-label={`${job.step ?? "progress"}: ${percent}%`} />
      )}
      {showError && job.error && <span className="error"> {job.error.detail}</span>}
    </span>
  );
}
