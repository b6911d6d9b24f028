#!/usr/bin/env python3
"""Saves two styles into a GeoPackage's layer, as a QGIS user does (Layer
Properties, Style, Save to database): categorized by `continent` (the
default) and graduated by `pop_est`. QGIS writes both as QML and SLD into
the GeoPackage's `layer_styles` table. Argument: the GeoPackage, whose
layer is `countries`."""
import os
import sys

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
from qgis.core import (QgsApplication, QgsCategorizedSymbolRenderer, QgsGraduatedSymbolRenderer,  # noqa: E402
                       QgsRendererCategory, QgsRendererRange, QgsSymbol, QgsVectorLayer)
from qgis.PyQt.QtGui import QColor  # noqa: E402

app = QgsApplication([], False)
app.initQgis()
layer = QgsVectorLayer(f"{sys.argv[1]}|layername=countries", "countries", "ogr")
assert layer.isValid(), "the layer opens"


def symbol(color):
    s = QgsSymbol.defaultSymbol(layer.geometryType())
    s.setColor(QColor(color))
    return s


categories = [QgsRendererCategory(v, symbol(c), v)
              for v, c in [("Africa", "#e41a1c"), ("Asia", "#377eb8"), ("Europe", "#4daf4a")]]
categories.append(QgsRendererCategory(None, symbol("#999999"), "other"))
layer.setRenderer(QgsCategorizedSymbolRenderer("continent", categories))
layer.saveStyleToDatabase("by continent", "categorized by continent", True, "")
ranges = [QgsRendererRange(lo, hi, symbol(c), f"{lo}-{hi}")
          for lo, hi, c in [(0, 1e7, "#fee5d9"), (1e7, 1e8, "#fb6a4a"), (1e8, 2e9, "#a50f15")]]
layer.setRenderer(QgsGraduatedSymbolRenderer("pop_est", ranges))
layer.saveStyleToDatabase("by population", "graduated by population", False, "")
del layer, categories, ranges
app.exitQgis()
