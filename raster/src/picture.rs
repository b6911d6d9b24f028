//! A small picture of vector data, drawn in Web Mercator: each layer of
//! shapes (well-known binary, in EPSG:3857) is burnt into a mask by GDAL's
//! rasterizer and blended over what is drawn already in its colour, then
//! the whole is encoded as PNG. What a catalog card, a STAC thumbnail or a
//! link preview shows of a dataset or a map.
use gdal::{
    DriverManager,
    raster::{RasterizeOptions, rasterize},
    vector::Geometry,
};

use crate::{
    RasterError,
    tile::{TileFormat, encode},
};

/// A canvas over `bounds` (west, south, east, north in EPSG:3857 metres).
pub struct Picture {
    size: (usize, usize),
    bounds: [f64; 4],
    pixels: Vec<[u8; 4]>,
}

/// How shapes are burnt: their insides, or every pixel they touch (lines,
/// points too small for an inside; an area's inside too, so an outline is
/// drawn from the area's boundary).
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Burn {
    Inside,
    Touched,
}

impl Picture {
    pub fn new(size: (usize, usize), bounds: [f64; 4], background: [u8; 4]) -> Self {
        Self {
            size,
            bounds,
            pixels: vec![background; size.0 * size.1],
        }
    }

    /// One pixel's width in metres: how far apart two points may be and
    /// still be drawn as one.
    pub fn pixel_size(&self) -> f64 {
        (self.bounds[2] - self.bounds[0]) / self.size.0 as f64
    }

    /// Blends `colour` (its alpha as opacity) over every pixel the shapes
    /// cover. Shapes that are not well-known binary are left out.
    pub fn draw(&mut self, shapes: &[Vec<u8>], burn: Burn, colour: [u8; 4]) -> Result<(), RasterError> {
        let geometries: Vec<Geometry> = shapes.iter().filter_map(|wkb| Geometry::from_wkb(wkb).ok()).collect();
        if geometries.is_empty() {
            return Ok(());
        }
        let (width, height) = self.size;
        let mut mask =
            DriverManager::get_driver_by_name("MEM")?.create_with_band_type::<u8, _>("", width, height, 1)?;
        let [west, south, east, north] = self.bounds;
        mask.set_geo_transform(&[
            west,
            (east - west) / width as f64,
            0.0,
            north,
            0.0,
            -(north - south) / height as f64,
        ])?;
        let options = RasterizeOptions {
            all_touched: burn == Burn::Touched,
            ..Default::default()
        };
        rasterize(
            &mut mask,
            &[1],
            &geometries,
            &vec![255.0; geometries.len()],
            Some(options),
        )?;
        let covered = mask.rasterband(1)?.read_as::<u8>((0, 0), self.size, self.size, None)?;
        let alpha = u16::from(colour[3]);
        for (pixel, &inside) in self.pixels.iter_mut().zip(covered.data()) {
            if inside == 0 {
                continue;
            }
            for c in 0..3 {
                let over = u16::from(colour[c]) * alpha + u16::from(pixel[c]) * (255 - alpha);
                pixel[c] = (over / 255) as u8;
            }
            pixel[3] = pixel[3].max(colour[3]);
        }
        Ok(())
    }

    pub fn png(&self) -> Result<Vec<u8>, RasterError> {
        encode(&self.pixels, self.size, TileFormat::Png)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wkb(wkt: &str) -> Vec<u8> {
        Geometry::from_wkt(wkt).unwrap().wkb().unwrap()
    }

    #[test]
    fn shapes_are_blended_where_they_lie() {
        let mut picture = Picture::new((20, 10), [0.0, 0.0, 200.0, 100.0], [255, 255, 255, 255]);
        // The left half, in opaque red; then a touched line along the top.
        picture
            .draw(
                &[wkb("POLYGON((0 0,100 0,100 100,0 100,0 0))")],
                Burn::Inside,
                [255, 0, 0, 255],
            )
            .unwrap();
        picture
            .draw(&[wkb("LINESTRING(105 95,195 95)")], Burn::Touched, [0, 0, 255, 128])
            .unwrap();
        let at = |x: usize, y: usize| picture.pixels[y * 20 + x];
        assert_eq!(at(2, 5), [255, 0, 0, 255]);
        assert_eq!(at(15, 5), [255, 255, 255, 255], "nothing drawn there");
        assert_eq!(at(15, 0), [127, 127, 255, 255], "half blue over white");
        let png = picture.png().unwrap();
        assert_eq!(&png[1..4], b"PNG");
    }
}
