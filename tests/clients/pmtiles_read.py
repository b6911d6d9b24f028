"""Reads a PMTiles archive by byte ranges, as a static host's reader does,
with the `pmtiles` package (PyPI): prints the header, the metadata and
each tile's address and size, and writes every tile (gunzipped) to
<out>/<z>/<x>/<y>.pbf.

Usage: pmtiles_read.py <archive file> <out folder>
"""
import gzip
import json
import os
import sys

from pmtiles.reader import Reader, all_tiles

path, out = sys.argv[1], sys.argv[2]
archive = open(path, "rb")


def get_bytes(offset, length):
    archive.seek(offset)
    return archive.read(length)


reader = Reader(get_bytes)
header = reader.header()
metadata = reader.metadata()
tiles = []
for (z, x, y), data in all_tiles(get_bytes):
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    folder = os.path.join(out, str(z), str(x))
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, f"{y}.pbf"), "wb") as f:
        f.write(data)
    tiles.append([z, x, y, len(data)])
plain = {k: (v.name if hasattr(v, "name") else v) for k, v in header.items()}
print(json.dumps({"header": plain, "metadata": metadata, "tiles": tiles}))
