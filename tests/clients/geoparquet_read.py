"""Reads a GeoParquet download as its users do: pyarrow (the schema, row
groups and `geo` metadata), geopandas (geometries and CRS) and DuckDB (SQL
over the file, with no extension). Prints what each saw as one JSON object.

Usage: geoparquet_read.py <file.parquet> <key column>
"""
import json
import sys

import duckdb
import geopandas
import pyarrow.parquet as pq

path, key = sys.argv[1], sys.argv[2]
parquet = pq.ParquetFile(path)
metadata = parquet.metadata
geo = json.loads(metadata.metadata[b"geo"]) if b"geo" in (metadata.metadata or {}) else None
table = parquet.read()
rows = table.to_pylist()


def plain(value):
    """JSON for what pyarrow gives: dates and times as ISO text, bytes as hex."""
    if isinstance(value, bytes):
        return value.hex()
    if hasattr(value, "isoformat"):
        return value.isoformat()
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


groups = []
for i in range(metadata.num_row_groups):
    group = metadata.row_group(i)
    bbox = {}
    for c in range(group.num_columns):
        column = group.column(c)
        parts = column.path_in_schema.split(".")
        if len(parts) == 2 and parts[1] in ("xmin", "ymin", "xmax", "ymax") and column.statistics is not None:
            stats = column.statistics
            bbox[parts[1]] = [stats.min, stats.max] if stats.has_min_max else None
    groups.append({"rows": group.num_rows, "bbox": bbox})

out = {
    "num_rows": metadata.num_rows,
    "schema": {field.name: str(field.type) for field in table.schema},
    "row_groups": groups,
    "geo": geo,
    "rows": {str(row[key]): {k: plain(v) for k, v in row.items() if k != (geo or {}).get("primary_column")} for row in rows},
}

if geo is not None:
    frame = geopandas.read_parquet(path)
    out["geopandas"] = {
        "rows": len(frame),
        "crs_epsg": frame.crs.to_epsg() if frame.crs is not None else None,
        "crs_is_crs84": bool(frame.crs is not None and frame.crs.equals("OGC:CRS84")),
        "total_bounds": [float(v) for v in frame.total_bounds],
        "geometry_types": sorted(set(frame.geometry.geom_type.dropna())),
        "has_z": bool(frame.geometry.has_z.any()),
        "points": {
            str(k): [float(g.representative_point().x), float(g.representative_point().y)] if g is not None and not g.is_empty else None
            for k, g in zip(frame[key], frame.geometry)
        },
    }

connection = duckdb.connect()
connection.execute("SET autoinstall_known_extensions = false")
connection.execute("SET autoload_known_extensions = false")
described = connection.execute("DESCRIBE SELECT * FROM read_parquet(?)", [path]).fetchall()
count = connection.execute("SELECT count(*) FROM read_parquet(?)", [path]).fetchone()[0]
out["duckdb"] = {"rows": count, "types": {name: kind for name, kind, *_ in described}}
print(json.dumps(out, default=str))
