#!/usr/bin/env python3
"""Opens a GeoPackage's layer in QGIS as a user does (Layer > Add Vector
Layer, QGIS's defaults: the database's default style applies) and prints
how QGIS draws it, as JSON: the renderer's type, the attribute it
classifies by, and each class's label and colour.

Usage: qgis_open_styled.py GPKG LAYER"""
import json
import os
import sys

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
from qgis.core import QgsApplication, QgsVectorLayer  # noqa: E402

app = QgsApplication([], False)
app.initQgis()
layer = QgsVectorLayer(f"{sys.argv[1]}|layername={sys.argv[2]}", sys.argv[2], "ogr")
renderer = layer.renderer() if layer.isValid() else None
drawn = {"valid": layer.isValid(), "renderer": renderer.type() if renderer else None}
if renderer is not None and renderer.type() == "categorizedSymbol":
    drawn["attribute"] = renderer.classAttribute()
    drawn["classes"] = [[c.label(), c.symbol().color().name()] for c in renderer.categories()]
print(json.dumps(drawn), flush=True)
del layer, renderer
app.exitQgis()
