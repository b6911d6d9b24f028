"""Runs stac-api-validator (PyPI) against the service with no internet:
every JSON Schema it fetches is served from a copy on this machine, the
STAC core and extension schemas from `tests/data/stac-schemas` (vendored
with their licences), GeoJSON's from pystac's package, PROJJSON's from
pyproj's and JSON Schema's own from jsonschema-specifications. Any other
address outside loopback fails, so nothing is skipped in silence.

Usage: stac_validate.py <validator arguments...>
"""
import io
import ipaddress
import json
import pathlib
import sys
import urllib.parse

import jsonschema_specifications
import pyproj
import pystac
import requests
import requests.adapters

SCHEMAS = pathlib.Path(__file__).resolve().parent.parent / "data" / "stac-schemas"
PACKAGED = {
    "https://geojson.org/schema/Feature.json": pathlib.Path(pystac.__file__).parent / "validation/jsonschemas/geojson/Feature.json",
    "https://geojson.org/schema/Geometry.json": pathlib.Path(pystac.__file__).parent / "validation/jsonschemas/geojson/Geometry.json",
    "https://proj.org/schemas/v0.7/projjson.schema.json": pathlib.Path(pyproj.__file__).parent / "proj_dir/share/proj/projjson.schema.json",
    "http://json-schema.org/draft-07/schema": pathlib.Path(jsonschema_specifications.__file__).parent / "schemas/draft7/metaschema.json",
}


def local_copy(url):
    """The file on this machine that holds the schema at `url`, or None."""
    plain = url.split("#")[0]
    if plain in PACKAGED:
        return PACKAGED[plain]
    parts = urllib.parse.urlsplit(plain)
    path = SCHEMAS / parts.netloc / parts.path.lstrip("/")
    return path if parts.scheme == "https" and path.is_file() and SCHEMAS in path.resolve().parents else None


def loopback(url):
    host = urllib.parse.urlsplit(url).hostname or ""
    try:
        return host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class Offline(requests.adapters.HTTPAdapter):
    """Answers schema addresses from their copies; refuses anything else
    outside loopback."""

    def send(self, request, **kwargs):
        if loopback(request.url):
            return super().send(request, **kwargs)
        copy = local_copy(request.url)
        if copy is None:
            raise requests.ConnectionError(f"offline: no local copy of {request.url}")
        response = requests.Response()
        response.status_code = 200
        response.url = request.url
        response.request = request
        response.headers["Content-Type"] = "application/schema+json"
        response.raw = io.BytesIO(copy.read_bytes())
        return response


original_init = requests.Session.__init__


def offline_session(self, *args, **kwargs):
    original_init(self, *args, **kwargs)
    adapter = Offline()
    self.mount("http://", adapter)
    self.mount("https://", adapter)


requests.Session.__init__ = offline_session

# Every copy named above must be there and be JSON, or the run proves nothing.
for url, path in PACKAGED.items():
    json.loads(path.read_text())

from stac_api_validator.__main__ import main  # noqa: E402

sys.exit(main(sys.argv[1:], prog_name="stac-api-validator"))
