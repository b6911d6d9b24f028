"""Reads a collection's items in another CRS with OWSLib.

Usage: owslib_crs.py BASE_URL COLLECTION_ID CRS_URI BBOX_IN_THAT_CRS
Prints one JSON object: the collection's `crs` list and `storageCrs`, the
Content-Crs header of the items answer, and the features read with
`crs` and `bbox-crs` both set to CRS_URI.
"""
import json
import sys

from owslib.ogcapi.features import Features

base, collection_id, crs, bbox = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
api = Features(base)
collection = api.collection(collection_id)
page = api.collection_items(
    collection_id,
    crs=crs,
    limit=1000,
    bbox=[float(v) for v in bbox.split(",")],
    **{"bbox-crs": crs},
)
print(
    json.dumps(
        {
            "crs": collection["crs"],
            "storageCrs": collection["storageCrs"],
            "content_crs": api.response_headers.get("Content-Crs"),
            "features": page["features"],
        }
    )
)
