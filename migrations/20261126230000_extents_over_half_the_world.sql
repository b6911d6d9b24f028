-- Extents in the antimeridian-crossing form that span half the world or
-- more (data spread over the globe, such as the world's capitals) become
-- plain boxes over every longitude: a crossing box only for data that
-- really is a region across 180° (docs/decisions.md, Extents).
UPDATE datasets
SET extent_bbox = ARRAY[-180, extent_bbox[2], 180, extent_bbox[4]]
WHERE cardinality(extent_bbox) = 4
  AND extent_bbox[1] > extent_bbox[3]
  AND extent_bbox[3] + 360 - extent_bbox[1] >= 180;
