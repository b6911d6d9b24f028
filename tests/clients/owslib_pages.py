"""Pages a whole collection with OWSLib, following rel=next links.

Usage: owslib_pages.py BASE_URL COLLECTION_ID PAGE_SIZE
Prints one JSON object: the collections OWSLib lists and the feature ids
read, in order.
"""
import json
import sys
from urllib.parse import parse_qsl, urlparse

from owslib.ogcapi.features import Features

base, collection_id, page_size = sys.argv[1], sys.argv[2], int(sys.argv[3])
api = Features(base)
listed = [c["id"] for c in api.collections()["collections"]]
ids = []
params = {"limit": page_size}
pages = 0
while True:
    page = api.collection_items(collection_id, **params)
    pages += 1
    ids.extend(f["id"] for f in page["features"])
    nxt = next((link for link in page["links"] if link["rel"] == "next"), None)
    if nxt is None or pages > 10000:
        break
    params = dict(parse_qsl(urlparse(nxt["href"]).query))
print(json.dumps({"collections": listed, "ids": ids, "pages": pages, "matched": page["numberMatched"]}))
