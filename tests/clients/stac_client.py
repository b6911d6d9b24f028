"""Reads the STAC API as a STAC client does, and validates every item.

Usage: stac_client.py STAC_URL API_KEY
With pystac-client (the caller's API key in X-Api-Key): opens the landing
page, lists the collections and their items, searches both kinds page by
page, and for
every item validates it, opens its `self` link (with the key) and its data
asset (without it: a public asset needs none, a private one is signed).

Validation stays on loopback: pystac checks the STAC core schema it ships
(the item read through pystac's own migration to the version it ships,
1.1.0), and the projection, raster and web-map-links fields through its
extension classes; nothing is fetched from the network (any attempt fails).
Prints one JSON object: each collection's item ids, and per item found by
search its collection, what its self link gave and the data asset's
status and media type.
"""
import json
import sys
import urllib.error
import urllib.parse
import urllib.request

import pystac
from pystac.extensions.projection import ProjectionExtension
from pystac.extensions.raster import DataType, RasterExtension
from pystac.validation import validate_dict
from pystac_client import Client

url, key = sys.argv[1], sys.argv[2]
host = urllib.parse.urlsplit(url).hostname


class LoopbackOnly(pystac.StacIO):
    """pystac's reads, refused anywhere but the service under test."""

    def read_text(self, source, *args, **kwargs):
        href = str(source)
        if urllib.parse.urlsplit(href).hostname != host:
            raise RuntimeError(f"the test reads nothing off loopback: {href}")
        with urllib.request.urlopen(urllib.request.Request(href, headers={"X-Api-Key": key})) as answer:
            return answer.read().decode()

    def write_text(self, dest, txt, *args, **kwargs):
        raise RuntimeError("nothing is written")


pystac.StacIO.set_default(LoopbackOnly)


def fetch(href, headers=None):
    """Status, media type and body of a GET; errors are answers too."""
    request = urllib.request.Request(href, headers=headers or {})
    try:
        with urllib.request.urlopen(request) as answer:
            return answer.status, answer.headers.get("content-type"), answer.read()
    except urllib.error.HTTPError as refused:
        return refused.code, refused.headers.get("content-type"), refused.read()


def check(item_dict):
    """Validates one item; raises on the first fault."""
    item = pystac.Item.from_dict(item_dict)
    # The core schema pystac ships, with no extension schema (those would
    # be fetched): the extensions are checked through their classes below.
    validate_dict(item.to_dict(include_self_link=False), extensions=[])
    links = {link.rel: link.href for link in item.links}
    for rel in ("self", "root", "parent", "collection"):
        assert rel in links, f"{item.id}: no {rel} link"
    if item.collection_id == "raster":
        assert ProjectionExtension.has_extension(item), item.stac_extensions
        proj = ProjectionExtension.ext(item)
        assert proj.code or proj.wkt2, "a CRS"
        assert len(proj.shape) == 2 and all(isinstance(n, int) and n > 0 for n in proj.shape), proj.shape
        assert proj.transform is None or len(proj.transform) in (6, 9), proj.transform
        data = item.assets["data"]
        assert data.media_type == "image/tiff; application=geotiff; profile=cloud-optimized", data.media_type
        assert data.roles == ["data"], data.roles
        assert RasterExtension.has_extension(item), item.stac_extensions
        for band in RasterExtension.ext(data).bands:
            assert band.data_type in {t.value for t in DataType}, band.data_type
            assert band.statistics.minimum <= band.statistics.maximum
        assert item.assets["thumbnail"].media_type == "image/png"
        assert "{z}" in links["xyz"] and "{x}" in links["xyz"] and "{y}" in links["xyz"], links["xyz"]
        return data.href
    assert "items" in links, f"{item.id}: no OGC API Features items link"
    for name in ("gpkg", "geojson", "csv", "shp"):
        assert "data" in item.assets[name].roles, name
    return item.assets["geojson"].href


client = Client.open(url, headers={"X-Api-Key": key})
# Each collection's items, through OGC API Features (pystac-client pages them).
collections = {c.id: sorted(i.id for i in c.get_items()) for c in client.get_collections()}
found = {}
for item in client.search(collections=["vector", "raster"], limit=2).items():
    data_href = check(item.to_dict(transform_hrefs=False))
    status, media_type, body = fetch(item.get_self_href(), {"X-Api-Key": key})
    again = json.loads(body) if status == 200 else {}
    # A byte range of the asset, with no credential at all.
    asset_status, asset_type, _ = fetch(data_href, {"Range": "bytes=0-99"})
    found[item.id] = {
        "collection": item.collection_id,
        "self_status": status,
        "self_id": again.get("id"),
        "self_collection": again.get("collection"),
        "data_status": asset_status,
        "data_type": asset_type,
    }
print(json.dumps({"collections": collections, "items": found}))
