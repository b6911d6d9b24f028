//! A small map drawn on the server as inline SVG, in longitude and
//! latitude (plate carrée) with a labelled graticule: no script, no tiles,
//! nothing from another site, so the page's policy can forbid every load.
use maud::{Markup, html};
use serde_json::Value;

/// How much of the world a map shows.
#[derive(Clone, Copy)]
pub enum View {
    /// The whole world: where on Earth an extent or a record lies.
    World,
    /// The geometries themselves, drawn together when they sit on both
    /// sides of the antimeridian.
    Fit,
}

/// Room for the labels: latitudes on the left, longitudes below (the
/// last one centred on the right edge).
const LEFT: f64 = 52.0;
const BOTTOM: f64 = 22.0;
const RIGHT: f64 = 20.0;
const EDGE: f64 = 8.0;
const MAX_WIDTH: f64 = 640.0;
const MAX_HEIGHT: f64 = 400.0;
const INK: &str = "#1d4ed8";

type Position = [f64; 2];

enum Shape {
    Point(Position),
    Line(Vec<Position>),
    Polygon(Vec<Vec<Position>>),
}

/// The map of GeoJSON geometries, named `label` for assistive technology;
/// nothing when none has a position.
pub fn geometries<'a>(geometries: impl IntoIterator<Item = &'a Value>, view: View, label: &str) -> Option<Markup> {
    let mut shapes = Vec::new();
    for geometry in geometries {
        shapes_of(geometry, &mut shapes);
    }
    if shapes.is_empty() {
        return None;
    }
    let projection = Projection::new(&shapes, view)?;
    Some(projection.draw(&shapes, label))
}

/// The geometry of an extent `[west, south, east, north]`: two boxes when
/// west is greater than east (it crosses the antimeridian, RFC 7946).
pub fn extent_geometry(bbox: &[f64]) -> Option<Value> {
    let &[west, south, east, north] = bbox else {
        return None;
    };
    let rectangle = |w: f64, e: f64| serde_json::json!([[[w, south], [e, south], [e, north], [w, north], [w, south]]]);
    Some(if west <= east {
        serde_json::json!({"type": "Polygon", "coordinates": rectangle(west, east)})
    } else {
        serde_json::json!({"type": "MultiPolygon", "coordinates": [rectangle(west, 180.0), rectangle(-180.0, east)]})
    })
}

fn position(value: &Value) -> Option<Position> {
    Some([value.get(0)?.as_f64()?, value.get(1)?.as_f64()?])
}

fn positions(value: &Value) -> Vec<Position> {
    each(value).filter_map(position).collect()
}

fn each(value: &Value) -> impl Iterator<Item = &Value> {
    value.as_array().into_iter().flatten()
}

fn shapes_of(geometry: &Value, out: &mut Vec<Shape>) {
    let coordinates = &geometry["coordinates"];
    match geometry["type"].as_str() {
        Some("Point") => out.extend(position(coordinates).map(Shape::Point)),
        Some("MultiPoint") => out.extend(positions(coordinates).into_iter().map(Shape::Point)),
        Some("LineString") => out.push(Shape::Line(positions(coordinates))),
        Some("MultiLineString") => out.extend(each(coordinates).map(|l| Shape::Line(positions(l)))),
        Some("Polygon") => out.push(Shape::Polygon(each(coordinates).map(positions).collect())),
        Some("MultiPolygon") => {
            out.extend(each(coordinates).map(|p| Shape::Polygon(each(p).map(positions).collect())));
        }
        Some("GeometryCollection") => each(&geometry["geometries"]).for_each(|g| shapes_of(g, out)),
        _ => {}
    }
}

/// The longitudes each shape spans (GeoJSON edges are straight in
/// longitude and latitude, so an edge spans the longitudes between its ends).
fn spans(shapes: &[Shape]) -> Vec<(f64, f64)> {
    let mut spans = Vec::new();
    let mut path = |points: &[Position]| {
        spans.extend(points.iter().map(|p| (p[0], p[0])));
        spans.extend(points.windows(2).map(|w| (w[0][0].min(w[1][0]), w[0][0].max(w[1][0]))));
    };
    for shape in shapes {
        match shape {
            Shape::Point(p) => path(std::slice::from_ref(p)),
            Shape::Line(line) => path(line),
            Shape::Polygon(rings) => rings.iter().for_each(|r| path(r)),
        }
    }
    spans
}

/// Where the map starts east of the antimeridian: longitudes below the
/// cut are drawn 360° further east. There is a cut when the widest empty
/// band of longitudes is inside -180..180 rather than across ±180, so data
/// on both sides of the antimeridian is drawn together, not at the map's
/// two edges.
fn antimeridian_cut(shapes: &[Shape]) -> Option<f64> {
    let mut spans = spans(shapes);
    spans.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut covered: Vec<(f64, f64)> = Vec::new();
    for (start, end) in spans {
        match covered.last_mut() {
            Some(last) if start <= last.1 => last.1 = last.1.max(end),
            _ => covered.push((start, end)),
        }
    }
    let across = covered.first()?.0 + 360.0 - covered.last()?.1;
    let (gap, cut) = covered
        .windows(2)
        .map(|w| (w[1].0 - w[0].1, w[1].0))
        .max_by(|a, b| a.0.total_cmp(&b.0))?;
    (gap > across).then_some(cut)
}

/// From longitude and latitude to the picture's pixels.
struct Projection {
    cut: Option<f64>,
    west: f64,
    south: f64,
    east: f64,
    north: f64,
    scale: f64,
    /// Degrees between graticule lines: meridians, parallels.
    steps: [f64; 2],
}

impl Projection {
    fn new(shapes: &[Shape], view: View) -> Option<Self> {
        let (cut, [west, south, east, north]) = match view {
            View::World => (None, [-180.0, -90.0, 180.0, 90.0]),
            View::Fit => {
                let cut = antimeridian_cut(shapes);
                (cut, fitted_bounds(shapes, cut)?)
            }
        };
        let scale = ((MAX_WIDTH - LEFT - RIGHT) / (east - west)).min((MAX_HEIGHT - BOTTOM - EDGE) / (north - south));
        let steps = match view {
            View::World => [30.0; 2],
            View::Fit => [graticule_step(east - west), graticule_step(north - south)],
        };
        Some(Self {
            cut,
            west,
            south,
            east,
            north,
            scale,
            steps,
        })
    }

    fn x(&self, lon: f64) -> f64 {
        LEFT + (shift(lon, self.cut) - self.west) * self.scale
    }

    fn y(&self, lat: f64) -> f64 {
        EDGE + (self.north - lat) * self.scale
    }

    fn width(&self) -> f64 {
        LEFT + (self.east - self.west) * self.scale + RIGHT
    }

    fn height(&self) -> f64 {
        EDGE + (self.north - self.south) * self.scale + BOTTOM
    }

    /// SVG path data of the rings, leaving out points within half a pixel
    /// of the one before (a detailed coastline stays a small page).
    fn path(&self, rings: &[Vec<Position>], close: bool) -> String {
        let mut d = String::new();
        for ring in rings {
            let mut last: Option<(f64, f64)> = None;
            for (i, p) in ring.iter().enumerate() {
                let (x, y) = (self.x(p[0]), self.y(p[1]));
                if last.is_some_and(|(lx, ly)| (x - lx).abs() < 0.5 && (y - ly).abs() < 0.5) && i + 1 < ring.len() {
                    continue;
                }
                d.push_str(&format!("{}{x:.1} {y:.1}", if last.is_none() { 'M' } else { 'L' }));
                last = Some((x, y));
            }
            if close && last.is_some() {
                d.push('Z');
            }
        }
        d
    }

    fn draw(&self, shapes: &[Shape], label: &str) -> Markup {
        let (width, height) = (self.width(), self.height());
        let [lon_step, lat_step] = self.steps;
        let meridians = multiples(self.west, self.east, lon_step);
        let parallels = multiples(self.south, self.north, lat_step);
        let (left, right, top, bottom) = (LEFT, width - RIGHT, EDGE, height - BOTTOM);
        html! {
            svg.map xmlns="http://www.w3.org/2000/svg" width=(format!("{width:.0}")) height=(format!("{height:.0}"))
                viewBox=(format!("0 0 {width:.0} {height:.0}")) role="img" aria-label=(label) {
                rect x=(left) y=(top) width=(right - left) height=(bottom - top) fill="#f1f5f9" {}
                g stroke="#cbd5e1" stroke-width="1" {
                    @for lon in &meridians {
                        line x1=(format!("{:.1}", left + (lon - self.west) * self.scale)) x2=(format!("{:.1}", left + (lon - self.west) * self.scale)) y1=(top) y2=(bottom) {}
                    }
                    @for lat in &parallels {
                        line x1=(left) x2=(right) y1=(format!("{:.1}", self.y(*lat))) y2=(format!("{:.1}", self.y(*lat))) {}
                    }
                }
                g fill="#374151" font-size="11" font-family="system-ui,sans-serif" {
                    @for lon in &meridians {
                        text x=(format!("{:.1}", left + (lon - self.west) * self.scale)) y=(format!("{:.1}", height - 6.0)) text-anchor="middle" { (degrees(*lon, lon_step, 'E', 'W')) }
                    }
                    @for lat in &parallels {
                        text x=(left - 4.0) y=(format!("{:.1}", self.y(*lat) + 4.0)) text-anchor="end" { (degrees(*lat, lat_step, 'N', 'S')) }
                    }
                }
                g fill=(INK) fill-opacity="0.2" stroke=(INK) stroke-width="2" stroke-linejoin="round" stroke-linecap="round" {
                    @for shape in shapes {
                        @match shape {
                            Shape::Polygon(rings) => path fill-rule="evenodd" d=(self.path(rings, true)) {},
                            Shape::Line(line) => path fill="none" d=(self.path(std::slice::from_ref(line), false)) {},
                            Shape::Point(p) => circle cx=(format!("{:.1}", self.x(p[0]))) cy=(format!("{:.1}", self.y(p[1]))) r="4" fill-opacity="0.8" stroke="#fff" stroke-width="1" {},
                        }
                    }
                }
            }
        }
    }
}

fn shift(lon: f64, cut: Option<f64>) -> f64 {
    match cut {
        Some(cut) if lon < cut => lon + 360.0,
        _ => lon,
    }
}

/// The shapes' bounds with a margin; a single point gets a small square
/// around it.
fn fitted_bounds(shapes: &[Shape], cut: Option<f64>) -> Option<[f64; 4]> {
    let mut bounds: Option<[f64; 4]> = None;
    let mut add = |p: &Position| {
        let lon = shift(p[0], cut);
        let b = bounds.get_or_insert([lon, p[1], lon, p[1]]);
        *b = [b[0].min(lon), b[1].min(p[1]), b[2].max(lon), b[3].max(p[1])];
    };
    for shape in shapes {
        match shape {
            Shape::Point(p) => add(p),
            Shape::Line(line) => line.iter().for_each(&mut add),
            Shape::Polygon(rings) => rings.iter().flatten().for_each(&mut add),
        }
    }
    let [west, south, east, north] = bounds?;
    let margin = ((east - west).max(north - south) * 0.05).max(0.05);
    Some([
        west - margin,
        (south - margin).max(-90.0),
        east + margin,
        (north + margin).min(90.0),
    ])
}

/// A round step giving a handful of graticule lines over `span` degrees.
fn graticule_step(span: f64) -> f64 {
    let rough = span / 5.0;
    if rough >= 10.0 {
        return [15.0, 30.0, 45.0, 90.0]
            .into_iter()
            .find(|s| *s >= rough)
            .unwrap_or(90.0);
    }
    let magnitude = 10f64.powf(rough.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * magnitude)
        .find(|s| *s >= rough)
        .unwrap_or(10.0 * magnitude)
}

fn multiples(from: f64, to: f64, step: f64) -> Vec<f64> {
    let first = (from / step).ceil() as i64;
    let last = (to / step).floor() as i64;
    (first..=last).map(|i| i as f64 * step).collect()
}

/// `30°E`, `12.5°S`; longitudes drawn east of 180° read as west again.
fn degrees(value: f64, step: f64, positive: char, negative: char) -> String {
    let value = if value > 180.0 { value - 360.0 } else { value };
    let decimals = (-step.log10().floor()).max(0.0) as usize;
    let text = format!("{:.*}", decimals, value.abs());
    if value.abs() < step / 2.0 || (positive == 'E' && (value.abs() - 180.0).abs() < f64::EPSILON) {
        format!("{text}°")
    } else {
        format!("{text}°{}", if value > 0.0 { positive } else { negative })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn shapes(geometry: Value) -> Vec<Shape> {
        let mut out = Vec::new();
        shapes_of(&geometry, &mut out);
        out
    }

    #[test]
    fn data_on_both_sides_of_the_antimeridian_is_drawn_together() {
        let across = shapes(json!({"type": "MultiPoint", "coordinates": [[175, 0], [-175, 1], [179, 2]]}));
        assert_eq!(antimeridian_cut(&across), Some(175.0), "drawn from 175°E on");
        let [west, _, east, _] = fitted_bounds(&across, antimeridian_cut(&across)).unwrap();
        assert!(west > 170.0 && east < 190.0, "{west}..{east}");
        let apart = shapes(json!({"type": "MultiPoint", "coordinates": [[-10, 0], [9, 1]]}));
        assert_eq!(antimeridian_cut(&apart), None);
        // A polygon edge spans the longitudes between its ends: no empty band.
        let world = shapes(
            json!({"type": "Polygon", "coordinates": [[[-180, -90], [180, -90], [180, 90], [-180, 90], [-180, -90]]]}),
        );
        assert_eq!(antimeridian_cut(&world), None);
    }

    #[test]
    fn an_extent_across_the_antimeridian_is_two_boxes() {
        let geometry = extent_geometry(&[170.0, -10.0, -170.0, 10.0]).unwrap();
        assert_eq!(geometry["type"], "MultiPolygon");
        assert_eq!(geometry["coordinates"][0][0][1], json!([180.0, -10.0]));
        assert_eq!(extent_geometry(&[1.0, 2.0, 3.0, 4.0]).unwrap()["type"], "Polygon");
    }

    #[test]
    fn graticule_labels_read_as_degrees() {
        assert_eq!(graticule_step(360.0), 90.0);
        assert_eq!(graticule_step(20.0), 5.0);
        assert_eq!(graticule_step(0.3), 0.1);
        assert_eq!(degrees(190.0, 10.0, 'E', 'W'), "170°W");
        assert_eq!(degrees(180.0, 10.0, 'E', 'W'), "180°");
        assert_eq!(degrees(-12.5, 0.5, 'N', 'S'), "12.5°S");
        assert_eq!(degrees(0.0, 30.0, 'N', 'S'), "0°");
    }
}
