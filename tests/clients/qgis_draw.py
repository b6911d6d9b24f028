"""Draws a layer with QGIS (Debian's python3-qgis, offscreen) and says what it drew.

Usage: qgis_draw.py cog URL OUT.png
       qgis_draw.py oapif API_BASE COLLECTION_ID OUT.png
       qgis_draw.py mvt TEMPLATE WEST SOUTH EAST NORTH OUT.png
`cog` reads a Cloud-Optimized GeoTIFF in place through GDAL's /vsicurl/;
`oapif` reads an OGC API Features collection with QGIS's own provider;
`mvt` reads vector tiles from an XYZ template (as QGIS's "Vector Tiles"
connection does), styled with QGIS's simple style.
Each is drawn in EPSG:3857 on a 256 x 256 image of the layer's extent (for
`mvt`, of the given extent in degrees).
Prints one JSON object: whether the layer is valid, its CRS, its feature
count (oapif), and how many pixels were painted.
"""
import json
import os
import sys

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from qgis.core import (  # noqa: E402
    QgsApplication,
    QgsCoordinateReferenceSystem,
    QgsCoordinateTransform,
    QgsMapRendererSequentialJob,
    QgsMapSettings,
    QgsProject,
    QgsRasterLayer,
    QgsRectangle,
    QgsVectorLayer,
    QgsVectorTileBasicRenderer,
    QgsVectorTileLayer,
)
from qgis.PyQt.QtCore import QSize  # noqa: E402
from qgis.PyQt.QtGui import QColor  # noqa: E402


def draw(mode, args):
    """The layer drawn, described; every QGIS object dies with this call,
    before QGIS exits (one outliving it crashes the exit)."""
    extent = None
    if mode == "cog":
        layer = QgsRasterLayer("/vsicurl/" + args[0], "cog", "gdal")
        out = args[1]
    elif mode == "mvt":
        layer = QgsVectorTileLayer(f"type=xyz&url={args[0]}&zmin=0&zmax=14", "mvt")
        renderer = QgsVectorTileBasicRenderer()
        renderer.setStyles(QgsVectorTileBasicRenderer.simpleStyleWithRandomColors())
        layer.setRenderer(renderer)
        extent = QgsRectangle(*(float(v) for v in args[1:5]))
        out = args[5]
    else:
        layer = QgsVectorLayer(f"url='{args[0]}' typename='{args[1]}'", "oapif", "OAPIF")
        out = args[2]
    result = {"valid": layer.isValid(), "crs": layer.crs().authid()}
    if not layer.isValid():
        return result
    mercator = QgsCoordinateReferenceSystem("EPSG:3857")
    settings = QgsMapSettings()
    settings.setLayers([layer])
    settings.setDestinationCrs(mercator)
    settings.setBackgroundColor(QColor(0, 0, 0, 0))
    settings.setOutputSize(QSize(256, 256))
    if extent is None:
        to_mercator = QgsCoordinateTransform(layer.crs(), mercator, QgsProject.instance())
        extent = to_mercator.transformBoundingBox(layer.extent())
    else:
        degrees = QgsCoordinateReferenceSystem("EPSG:4326")
        extent = QgsCoordinateTransform(degrees, mercator, QgsProject.instance()).transformBoundingBox(extent)
    settings.setExtent(extent)
    job = QgsMapRendererSequentialJob(settings)
    job.start()
    job.waitForFinished()
    image = job.renderedImage()
    image.save(out)
    result["painted"] = sum(
        1 for y in range(image.height()) for x in range(image.width()) if image.pixelColor(x, y).alpha() > 0
    )
    result["errors"] = [e.message for e in job.errors()]
    if mode == "oapif":
        result["features"] = layer.featureCount()
    return result


app = QgsApplication([], False)
app.initQgis()
print(json.dumps(draw(sys.argv[1], sys.argv[2:])), flush=True)
app.exitQgis()
