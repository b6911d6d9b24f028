#!/usr/bin/env python3
"""Fills a running service with a release's data and writes what it holds.

Usage: release_fixture.py BASE ADMIN_PASSWORD DATA_DIR MANIFEST

Run by scripts/release_fixture.sh against that release's own binaries. It
uploads one file of each kind the service ingests (GeoPackage, zipped
Shapefile, GeoJSON, CSV, GeoTIFF), adds a viewer, an API key and a map, and
writes MANIFEST (JSON): everything the upgrade test
(tests/tests/upgrade.rs) reads back after upgrading the database to the
current binaries.
"""
import hashlib
import io
import json
import pathlib
import subprocess
import sys
import time
import urllib.parse
import urllib.request
import zipfile

base, admin_password, data_dir, manifest_path = sys.argv[1:5]
data = pathlib.Path(data_dir)
work = pathlib.Path(manifest_path).parent


def call(method, path, token=None, body=None, headers=None, raw=False):
    headers = dict(headers or {})
    if token:
        headers["Authorization"] = f"Bearer {token}"
    payload = None
    if body is not None:
        payload = json.dumps(body).encode()
        headers["Content-Type"] = "application/json"
    request = urllib.request.Request(base + path, data=payload, method=method, headers=headers)
    with urllib.request.urlopen(request) as response:
        content = response.read()
    return content if raw else json.loads(content)


form = urllib.parse.urlencode({"username": "admin", "password": admin_password}).encode()
token = json.load(urllib.request.urlopen(urllib.request.Request(base + "/api/auth/login", data=form)))["access_token"]

shapefile = work / "naturalearth_cities.zip"
with zipfile.ZipFile(shapefile, "w") as archive:
    for member in sorted((data / "shp/naturalearth_cities").iterdir()):
        archive.write(member, member.name)

uploads = [
    ("gpkg/nc.gpkg", {"visibility": "private", "title": "North Carolina counties"}),
    (str(shapefile), {"visibility": "public", "title": "Cities"}),
    ("geojson/cycle_hire_osm.geojson", {"visibility": "public"}),
    ("csv/airports.csv", {"visibility": "private"}),
    ("raster/elev_luxembourg.tif", {"visibility": "public", "title": "Luxembourg elevation"}),
]
datasets = []
for relative, fields in uploads:
    path = data / relative
    form = [arg for name, value in fields.items() for arg in ("-F", f"{name}={value}")]
    out = subprocess.run(["curl", "-sf", "-H", f"Authorization: Bearer {token}", "-F", f"file=@{path}", *form,
                          base + "/api/datasets/upload"], check=True, capture_output=True, text=True)
    job_id = json.loads(out.stdout)["job_id"]
    while (job := call("GET", f"/api/jobs/{job_id}", token))["status"] in ("queued", "running"):
        time.sleep(0.3)
    assert job["status"] == "succeeded", job
    dataset = call("GET", f"/api/datasets/{job['dataset_id']}", token)
    entry = {"id": dataset["id"], "title": dataset["title"], "kind": dataset.get("kind", "vector"),
             "visibility": dataset["visibility"]}
    if entry["kind"] == "raster":
        grant = call("POST", f"/api/auth/download-token/{dataset['id']}", token)
        cog = call("GET", f"/api/datasets/{dataset['id']}/download?token={grant['token']}", raw=True)
        entry["cog_sha256"] = hashlib.sha256(cog).hexdigest()
    else:
        page = call("GET", f"/api/collections/{dataset['id']}/items?limit=3", token)
        entry["number_matched"] = page["numberMatched"]
        entry["first_features"] = [{"id": f["id"], "properties": f["properties"]} for f in page["features"]]
    datasets.append(entry)

call("POST", "/api/admin/users", token, {"username": "vera", "password": "Vera-Passw0rd-1", "role": "viewer"})
api_key = call("POST", "/api/auth/api-keys", token, {"name": "upgrade check"})["key"]
vector = [d["id"] for d in datasets if d["kind"] != "raster"]
raster = [d["id"] for d in datasets if d["kind"] == "raster"]
map_ = call("POST", "/api/maps", token, {
    "name": "Everything",
    "layers": [{"dataset_id": vector[0]}, {"dataset_id": raster[0], "layer_type": "raster_service"}],
})

version = call("GET", "/api/health")["version"]
manifest = {
    "version": version,
    "admin_password": admin_password,
    "viewer": {"username": "vera", "password": "Vera-Passw0rd-1"},
    "api_key": api_key,
    "datasets": datasets,
    "map": {"id": map_["id"], "layers": len(map_["layers"])},
}
pathlib.Path(manifest_path).write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
shapefile.unlink()
print(f"{len(datasets)} datasets, 1 map, release {version}")
