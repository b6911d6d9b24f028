#!/usr/bin/env python3
"""Drives bench/history.sh: loads the points, makes 100 single-feature
edits with If-Match, measures what the history added, restores version 1
and compares the restore job's time with the ingest job's."""
import json
import sys
import time

from driver_common import Service

base, gpkg, database_url, points = sys.argv[1:5]
service = Service(base, database_url).sign_in()
ingest = service.job(service.upload(gpkg))
dataset = ingest["dataset_id"]
ingest_seconds = service.job_seconds(ingest["id"])

history_bytes = ("SELECT coalesce(sum(pg_total_relation_size(c)), 0) FROM unnest(ARRAY["
                 "'feature_changes'::regclass, 'feature_changes_pkey'::regclass, "
                 "'feature_changes_by_version'::regclass, 'dataset_versions'::regclass, "
                 "'dataset_versions_pkey'::regclass]) AS c")
before = int(service.psql(history_bytes))
items = f"/api/collections/{dataset}/items"
started = time.time()
for i in range(100):
    fid = 1 + i * 9973
    _, headers, _ = service.call("GET", f"{items}/{fid}")
    body = json.dumps({"properties": {"name": f"edited {i}"}}).encode()
    service.call("PATCH", f"{items}/{fid}", data=body,
                 headers={"If-Match": headers["etag"], "Content-Type": "application/merge-patch+json"})
edits_seconds = time.time() - started
service.psql("VACUUM ANALYZE feature_changes, dataset_versions")
added = int(service.psql(history_bytes)) - before

status, _, body = service.call("POST", f"/api/datasets/{dataset}/versions/1/restore", data=b"")
assert status == 202, status
restore = service.job(body["job_id"])
restore_seconds = service.job_seconds(restore["id"])
page = service.get(f"{items}?limit=1")
assert page["numberMatched"] == int(points), page.get("numberMatched")
diff = service.get(f"/api/datasets/{dataset}/versions/1/diff/{102}?limit=10")
assert not (diff["added"] or diff["removed"] or diff["changed"]), "the restore is version 1 exactly"

print()
print(f"points:                      {int(points):,}")
print(f"100 single-feature edits:    {edits_seconds:.2f} s ({edits_seconds * 10:.1f} ms each, read and write)")
print(f"history added by 100 edits:  {added / 1e6:.2f} MB (goal under 5 MB: {'met' if added < 5e6 else 'NOT met'})")
print(f"ingest job:                  {ingest_seconds:.2f} s")
print(f"restore job (version 1):     {restore_seconds:.2f} s")
ratio = restore_seconds / ingest_seconds
print(f"ratio:                       {ratio:.2f} (goal at most 1: {'met' if ratio <= 1 else 'NOT met'})")
