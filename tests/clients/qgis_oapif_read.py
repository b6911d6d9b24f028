"""Reads a whole OGC API Features collection with QGIS's own OAPIF
provider (Debian's python3-qgis, offscreen), as a QGIS user adding the
layer does, with the provider's defaults.

Usage: qgis_oapif_read.py API_BASE COLLECTION_ID KEY_FIELD
Prints one JSON object: whether the layer is valid, its feature count,
its fields' types, how many features iteration read and their distinct
keys, and the seconds from opening the layer to the last feature.
"""
import json
import os
import sys
import time

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from qgis.core import QgsApplication, QgsVectorLayer  # noqa: E402


def read(base, collection, key):
    """What the layer held; every QGIS object dies with this call."""
    start = time.monotonic()
    layer = QgsVectorLayer(f"url='{base}' typename='{collection}'", "oapif", "OAPIF")
    result = {"valid": layer.isValid()}
    if not layer.isValid():
        return result
    result["fields"] = {field.name(): field.typeName() for field in layer.fields()}
    read_count, keys, nulls = 0, set(), 0
    for feature in layer.getFeatures():
        read_count += 1
        keys.add(feature[key])
        if feature.geometry().isNull():
            nulls += 1
    result.update(
        features=layer.featureCount(),
        read=read_count,
        distinct_keys=len(keys),
        null_geometries=nulls,
        seconds=round(time.monotonic() - start, 2),
    )
    return result


app = QgsApplication([], False)
app.initQgis()
print(json.dumps(read(*sys.argv[1:4])), flush=True)
app.exitQgis()
