"""Filters and sorts a STAC search with pystac-client as its users write
it, and the same by hand over every item, so the two can be compared.

Usage: pystac_filter.py STAC_URL
Prints one JSON object: for each case, the ids the server returned (in
order) and the ids a local filter and sort of all items gives.
"""
import json
import sys

from pystac_client import Client

client = Client.open(sys.argv[1])
every = list(client.search(max_items=None, limit=2).items())


def props(item):
    return item.properties


cases = {
    # CQL2 text, largest first.
    "text": (
        dict(filter="collection = 'vector' AND feature_count >= 3", sortby="-properties.feature_count", limit=2),
        lambda i: i.collection_id == "vector" and (props(i).get("feature_count") or 0) >= 3,
        lambda i: -props(i)["feature_count"],
    ),
    # CQL2 JSON (pystac-client sends it as a POST body), by title.
    "json": (
        dict(
            filter={"op": "and", "args": [
                {"op": "like", "args": [{"property": "title"}, "place%"]},
                {"op": "<", "args": [{"property": "feature_count"}, 5]},
            ]},
            sortby=[{"field": "title", "direction": "asc"}],
            limit=2,
        ),
        lambda i: (i.properties.get("title") or "").startswith("place") and (props(i).get("feature_count") or 0) < 5,
        lambda i: props(i)["title"],
    ),
}
out = {}
for name, (search, keep, key) in cases.items():
    served = [i.id for i in client.search(max_items=None, **search).items()]
    local = [i.id for i in sorted((i for i in every if keep(i)), key=key)]
    out[name] = {"served": served, "local": local}
print(json.dumps({"every": len(every), "cases": out}))
