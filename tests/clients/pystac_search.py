"""Searches the STAC API with pystac-client, following its paging.

Usage: pystac_search.py STAC_URL BBOX PAGE_SIZE
Prints one JSON object: the item ids found and the collection they are in.
"""
import json
import sys

from pystac_client import Client

url, bbox, limit = sys.argv[1], [float(v) for v in sys.argv[2].split(",")], int(sys.argv[3])
client = Client.open(url)
search = client.search(bbox=bbox, collections=["datasets"], limit=limit, max_items=None)
items = list(search.items())
print(json.dumps({"ids": [i.id for i in items], "collections": sorted({i.collection_id for i in items}),
                  "pages": sum(1 for _ in client.search(bbox=bbox, collections=["datasets"], limit=limit).pages())}))
