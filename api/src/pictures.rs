//! Pictures of vector data for catalog cards, STAC thumbnails and link
//! previews: a PNG of the data over the built-in basemap's land, drawn in
//! Web Mercator by `catalog_raster::picture`. A dataset's picture frames
//! its extent (the world when it crosses the antimeridian); its shapes are
//! simplified to the pixel in PostGIS, and a big table drawn as its
//! generalized tiles are (or sampled, when it is not generalized), so a
//! picture costs a fraction of a second whatever the table's size.
use std::sync::Arc;

use axum::{
    http::{HeaderMap, HeaderValue, StatusCode, header},
    response::{IntoResponse, Response},
};
use bytes::Bytes;
use catalog_raster::picture::{Burn, Picture};
use catalog_shared::{AppError, datasets::StorageTier, db::quote_ident};
use quick_cache::{Weighter, sync::Cache};
use sqlx::PgPool;

use crate::{
    coordinates::{drawable, extent_in_world},
    dataset_record::Dataset,
    tile_cache::names_etag,
};

/// The picture's size in pixels: twice the catalog card's, for sharp
/// screens.
pub const SIZE: (usize, usize) = (240, 120);
/// Half the width of the Web Mercator square, in metres.
const HALF_WORLD: f64 = 20_037_508.342_789_244;
/// At most this many features are drawn, or points (each a dot of its
/// own); a bigger table is sampled.
const MOST_FEATURES: i64 = 20_000;
/// At most this many features in one picture, whatever it shows.
pub const MOST_PICTURE_FEATURES: i64 = 50_000;
const MOST_POINTS: i64 = 6_000;
const SEA: [u8; 4] = [214, 230, 242, 255];
const LAND: [u8; 4] = [238, 235, 226, 255];
const COAST: [u8; 4] = [190, 186, 176, 255];

/// Rendered pictures by what they show (the dataset's or map's id and
/// entity tag): a picture is drawn once per version, however many cards
/// and previews ask, and concurrent requests for one wait for one drawing.
#[derive(Clone)]
pub struct PictureCache(Arc<Cache<String, Bytes, PictureWeight>>);

/// What the kept pictures may weigh in all.
const KEPT_BYTES: u64 = 32 << 20;

#[derive(Clone)]
struct PictureWeight;

impl Weighter<String, Bytes> for PictureWeight {
    fn weight(&self, key: &String, png: &Bytes) -> u64 {
        (key.len() + png.len() + 64) as u64
    }
}

impl Default for PictureCache {
    fn default() -> Self {
        Self(Arc::new(Cache::with_weighter(4_096, KEPT_BYTES, PictureWeight)))
    }
}

/// A picture's answer: 304 when the client has `etag`, else the PNG kept
/// under `key` (what it shows and `etag`), or the picture `draw` makes,
/// kept; cached by clients for `cache` either way.
pub async fn respond(
    pictures: &PictureCache,
    key: String,
    request: &HeaderMap,
    etag: &str,
    cache: &'static str,
    draw: impl Future<Output = Result<Picture, AppError>>,
) -> Result<Response, AppError> {
    let mut response = if names_etag(request, etag) {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        let png = match pictures.0.get_value_or_guard_async(&key).await {
            Ok(png) => png,
            Err(guard) => {
                let picture = draw.await?;
                let png: Bytes = tokio::task::spawn_blocking(move || picture.png())
                    .await
                    .map_err(AppError::internal)?
                    .map_err(AppError::internal)?
                    .into();
                let _ = guard.insert(png.clone());
                png
            }
        };
        ([(header::CONTENT_TYPE, "image/png")], png).into_response()
    };
    let headers = response.headers_mut();
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static(cache));
    headers.insert(header::ETAG, HeaderValue::from_str(etag).map_err(AppError::internal)?);
    Ok(response)
}

/// A colour given as `#rrggbb`, at `opacity` (0 to 255).
pub fn rgba(hex: &str, opacity: u8) -> Option<[u8; 4]> {
    let hex = hex.strip_prefix('#')?;
    if hex.len() != 6 || !hex.is_ascii() {
        return None;
    }
    let channel = |i: usize| u8::from_str_radix(&hex[i..i + 2], 16).ok();
    Some([channel(0)?, channel(2)?, channel(4)?, opacity])
}

fn mercator_y(lat: f64) -> f64 {
    let lat = lat.clamp(-85.051_128_78, 85.051_128_78).to_radians();
    (std::f64::consts::FRAC_PI_4 + lat / 2.0).tan().ln() * HALF_WORLD / std::f64::consts::PI
}

/// The Web Mercator frame of a picture of `bbox` (west, south, east, north
/// in degrees): the extent and a margin, widened to the picture's shape
/// and kept within the world; the world when there is no extent or it
/// crosses the antimeridian.
pub fn frame(bbox: Option<&[f64]>) -> [f64; 4] {
    let aspect = SIZE.0 as f64 / SIZE.1 as f64;
    let (mut west, mut south, mut east, mut north) = match bbox.and_then(extent_in_world) {
        Some([w, s, e, n]) if w <= e && s <= n => (
            w * HALF_WORLD / 180.0,
            mercator_y(s),
            e * HALF_WORLD / 180.0,
            mercator_y(n),
        ),
        _ => (-HALF_WORLD, -HALF_WORLD, HALF_WORLD, HALF_WORLD),
    };
    // A margin of a tenth, and at least a kilometre round a point.
    let margin = ((east - west).max(north - south) * 0.1).max(1_000.0);
    (west, south, east, north) = (west - margin, south - margin, east + margin, north + margin);
    let (x, y) = ((west + east) / 2.0, (south + north) / 2.0);
    let width = (east - west).max((north - south) * aspect).min(2.0 * HALF_WORLD);
    let height = width / aspect;
    let x = x.clamp(-HALF_WORLD + width / 2.0, HALF_WORLD - width / 2.0);
    let y = y.clamp(-HALF_WORLD + height / 2.0, HALF_WORLD - height / 2.0);
    [x - width / 2.0, y - height / 2.0, x + width / 2.0, y + height / 2.0]
}

/// A blank picture of `frame` with the basemap's land drawn.
pub async fn basemap(pool: &PgPool, frame: [f64; 4]) -> Result<Picture, AppError> {
    let mut picture = Picture::new(SIZE, frame, SEA);
    if !frame.iter().chain([&picture.pixel_size()]).all(|v| v.is_finite()) {
        return Ok(picture);
    }
    let land: Vec<(Vec<u8>, Vec<u8>)> = sqlx::query_as(
        "SELECT ST_AsBinary(g), ST_AsBinary(ST_Boundary(g))
         FROM (SELECT ST_Simplify(geom, $5, true) AS g FROM basemap.countries
               WHERE geom && ST_MakeEnvelope($1, $2, $3, $4, 3857)) c",
    )
    .bind(frame[0])
    .bind(frame[1])
    .bind(frame[2])
    .bind(frame[3])
    .bind(picture.pixel_size())
    .fetch_all(pool)
    .await?;
    let (areas, coasts): (Vec<_>, Vec<_>) = land.into_iter().unzip();
    drawn(picture.draw(&areas, Burn::Inside, LAND))?;
    drawn(picture.draw(&coasts, Burn::Touched, COAST))?;
    Ok(picture)
}

/// Draws a vector dataset's features in `colour`, at most `budget` of
/// them: areas filled and outlined, lines as lines, points as dots; an
/// archived dataset's extent instead (drawing its data would bring it
/// back from the store). `table` is the dataset's, from `read_gate`.
pub async fn draw_dataset(
    (pool, table): (&PgPool, &str),
    picture: &mut Picture,
    dataset: &Dataset,
    colour: [u8; 4],
    budget: i64,
) -> Result<(), AppError> {
    if dataset.storage == StorageTier::Cold {
        return match &dataset.extent_bbox {
            Some(bbox) => draw_extent(pool, picture, bbox, colour).await,
            None => Ok(()),
        };
    }
    let pixel = picture.pixel_size();
    // Every number bound below is checked first: PostGIS crashes on a
    // buffer of NaN.
    if !(pixel.is_finite() && pixel > 0.0) {
        return Ok(());
    }
    let count = dataset.feature_count.unwrap_or(0).max(1);
    let points_only = dataset.geometry_type.and_then(|t| t.dimension()) == Some(0);
    let most = if points_only { MOST_POINTS } else { MOST_FEATURES }.min(budget).max(1);
    let geometry = quote_ident(&dataset.geometry_column);
    // The zoom whose 512-pixel tiles have the picture's pixel: below the
    // complete zoom a picture draws what those tiles draw (one feature in
    // each 8-pixel cell, spread evenly), else a big table is sampled by row,
    // not by TABLESAMPLE: a table registered in place may be a view, which
    // takes no TABLESAMPLE.
    let zoom = (2.0 * HALF_WORLD / (512.0 * pixel)).log2().ceil().clamp(0.0, 24.0) as u32;
    let sample = if dataset.is_generalized_at(zoom) {
        let first_zoom = catalog_shared::generalize::FIRST_ZOOM_COLUMN;
        let key = quote_ident(&dataset.key_column);
        format!("AND t.{first_zoom} <= {zoom} ORDER BY t.{first_zoom}, hashint8(t.{key}::bigint)")
    } else if count > most {
        format!("AND random() < {}", most as f64 / count as f64)
    } else {
        String::new()
    };
    let sql = format!(
        "WITH shapes AS (
           SELECT ST_Transform(t.{geometry}, 3857) AS g FROM {table} t
           WHERE {drawable} {sample} LIMIT $2)
         SELECT ST_Dimension(g), ST_AsBinary(s), ST_AsBinary(ST_Boundary(s))
         FROM shapes, LATERAL (SELECT CASE WHEN ST_Dimension(g) > 0 THEN ST_Simplify(g, $1, true)
                                           WHEN $3 >= 1 THEN ST_Buffer(g, $1 * $3, 2) ELSE g END AS s) drawn",
        drawable = drawable(dataset, &format!("t.{geometry}")),
    );
    let shapes: Vec<(i32, Vec<u8>, Option<Vec<u8>>)> = sqlx::query_as(sqlx::AssertSqlSafe(sql))
        .bind(pixel)
        .bind(most)
        .bind(dot_radius(count.min(most)))
        .fetch_all(pool)
        .await?;
    // Shapes of a dimension, or their boundaries (a point's dot's circle).
    let of = |dimension: i32, boundaries: bool| -> Vec<Vec<u8>> {
        shapes
            .iter()
            .filter(|(d, _, _)| *d == dimension)
            .filter_map(|(_, shape, boundary)| {
                if boundaries {
                    boundary.clone()
                } else {
                    Some(shape.clone())
                }
            })
            .collect()
    };
    let dark = [colour[0] / 2, colour[1] / 2, colour[2] / 2, 255];
    drawn(picture.draw(&of(2, false), Burn::Inside, [colour[0], colour[1], colour[2], 96]))?;
    drawn(picture.draw(&of(2, true), Burn::Touched, colour))?;
    drawn(picture.draw(&of(1, false), Burn::Touched, colour))?;
    let points = of(0, false);
    if dot_radius(count.min(most)) >= 1.0 {
        drawn(picture.draw(&points, Burn::Inside, colour))?;
        drawn(picture.draw(&of(0, true), Burn::Touched, dark))?;
    } else {
        // Dots of a pixel (the points themselves): an outline would double them.
        drawn(picture.draw(&points, Burn::Touched, colour))?;
    }
    Ok(())
}

/// A point's dot radius in pixels: 1.2 for a few points, smaller for
/// many, so that they cover about a fifth of the picture at most and a
/// dense layer still shows where it is dense.
fn dot_radius(points: i64) -> f64 {
    let pixels = (SIZE.0 * SIZE.1) as f64;
    (0.2 * pixels / points.max(1) as f64).sqrt().clamp(0.5, 1.2)
}

/// Outlines an extent (west, south, east, north in degrees) in `colour`.
async fn draw_extent(pool: &PgPool, picture: &mut Picture, bbox: &[f64], colour: [u8; 4]) -> Result<(), AppError> {
    // Cut to the world, or nothing drawn: ST_Segmentize of a box of
    // 1e308 degrees would make that many vertices.
    let Some([west, south, east, north]) = extent_in_world(bbox) else {
        return Ok(());
    };
    let boxes: Vec<Vec<u8>> = sqlx::query_scalar(
        "SELECT ST_AsBinary(ST_Boundary(ST_Transform(ST_Segmentize(ST_MakeEnvelope(w, greatest($2, -85.05), e, least($4, 85.05), 4326), 1), 3857)))
         FROM (VALUES ($1::float8, CASE WHEN $1 <= $3 THEN $3 ELSE 180 END),
                      (CASE WHEN $1 <= $3 THEN NULL ELSE -180 END, $3::float8)) AS b(w, e)
         WHERE w IS NOT NULL",
    )
    .bind(west)
    .bind(south)
    .bind(east)
    .bind(north)
    .fetch_all(pool)
    .await?;
    drawn(picture.draw(&boxes, Burn::Touched, colour))
}

fn drawn(result: Result<(), catalog_raster::RasterError>) -> Result<(), AppError> {
    result.map_err(AppError::internal)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_keep_the_pictures_shape_within_the_world() {
        for bbox in [
            None,
            Some(vec![170.0, -20.0, -170.0, -10.0]),
            Some(vec![-180.0, -90.0, 180.0, 83.6]),
        ] {
            let [w, s, e, n] = frame(bbox.as_deref());
            assert!((e - w - 2.0 * HALF_WORLD).abs() < 1e-6, "{bbox:?}: the world's width");
            assert!(((e - w) / (n - s) - 2.0).abs() < 1e-9);
            assert!(s >= -HALF_WORLD - 1e-6 && n <= HALF_WORLD + 1e-6);
        }
        // Extents counted from values no CRS has: the world, or cut to it.
        for bbox in [
            vec![5.1, -1e308, 1e308, 4_600_000.0],
            vec![f64::NAN, 0.0, 1.0, 1.0],
            vec![f64::NEG_INFINITY, -90.0, f64::INFINITY, 90.0],
        ] {
            let frame = frame(Some(&bbox));
            assert!(frame.iter().all(|v| v.is_finite()), "{bbox:?}: {frame:?}");
            assert!(frame[2] - frame[0] <= 2.0 * HALF_WORLD + 1e-6);
        }
        // Luxembourg: its extent, with a margin, in the middle.
        let [w, s, e, n] = frame(Some(&[5.7, 49.4, 6.5, 50.2]));
        assert!(w < 5.7 * HALF_WORLD / 180.0 && e > 6.5 * HALF_WORLD / 180.0);
        assert!(s < mercator_y(49.4) && n > mercator_y(50.2));
        assert!(((e - w) / (n - s) - 2.0).abs() < 1e-9);
        assert!(e - w < 500_000.0, "a country, not the world: {}", e - w);
    }

    #[test]
    fn colours_are_read_from_hex() {
        assert_eq!(rgba("#1b9e77", 255), Some([0x1b, 0x9e, 0x77, 255]));
        assert_eq!(rgba("1b9e77", 255), None);
        assert_eq!(rgba("#1b9é7", 255), None);
    }
}
