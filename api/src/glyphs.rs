//! Glyphs for map labels: the signed-distance-field glyph ranges MapLibre
//! asks for (`{fontstack}/{range}.pbf`), cut by FreeType from the fonts in
//! `FONTS_DIR` when first asked for and kept. A font is named by its family
//! and style ("DejaVu Sans Book"). A stack naming no font this service has
//! gets the default font, so a style written for other fonts still shows
//! its labels.
use std::{
    path::{Path, PathBuf},
    sync::Arc,
};

use catalog_shared::AppError;
use pbf_font_tools::{Fontstack, Glyphs, freetype, glyph_range_for_face, prost::Message};
use quick_cache::{Weighter, sync::Cache};
use tokio::sync::Semaphore;

/// The basemap's font, and the one a stack of unknown fonts gets.
pub const DEFAULT_FONTSTACK: &str = "DejaVu Sans Book";
/// Bytes of glyph ranges kept (a Latin range of one font is about 100 KB).
const KEPT_BYTES: u64 = 64 << 20;
/// Ranges cut at once: each takes a core for a moment, and raster tiles
/// share the blocking threads.
const CUTS_AT_ONCE: usize = 2;
/// How many fonts one stack may name.
const MAX_STACK: usize = 8;
/// MapLibre's conventions for SDF glyphs (as node-fontnik writes them).
const GLYPH_SIZE: usize = 24;
const SDF_RADIUS: usize = 8;
const SDF_CUTOFF: f64 = 0.25;

/// One face of a font file.
struct Face {
    name: String,
    path: PathBuf,
    index: isize,
}

/// The fonts found at start, and the glyph ranges cut so far.
pub struct Fonts {
    faces: Vec<Face>,
    ranges: Cache<(usize, u32), Arc<Fontstack>, RangeWeight>,
    cutting: Semaphore,
}

#[derive(Clone)]
struct RangeWeight;

impl Weighter<(usize, u32), Arc<Fontstack>> for RangeWeight {
    fn weight(&self, _key: &(usize, u32), range: &Arc<Fontstack>) -> u64 {
        let bitmaps: usize = range
            .glyphs
            .iter()
            .map(|g| g.bitmap.as_ref().map_or(0, Vec::len) + 32)
            .sum();
        bitmaps as u64 + 64
    }
}

impl Fonts {
    /// The fonts in `dir` (TrueType and OpenType files, collections too).
    /// A missing or unreadable directory leaves labels without glyphs,
    /// which the log says once.
    pub fn load(dir: &Path) -> Self {
        let faces = faces_in(dir).unwrap_or_else(|e| {
            tracing::warn!(dir = %dir.display(), error = %e, "no fonts for map labels: FONTS_DIR cannot be read");
            Vec::new()
        });
        if !faces.iter().any(|f| f.name == DEFAULT_FONTSTACK) {
            tracing::warn!(dir = %dir.display(), "FONTS_DIR holds no {DEFAULT_FONTSTACK}: unknown fonts fall back to the first one found");
        }
        Self {
            faces,
            ranges: Cache::with_weighter(1024, KEPT_BYTES, RangeWeight),
            cutting: Semaphore::new(CUTS_AT_ONCE),
        }
    }

    /// Which of our faces draw `stack` (a comma-separated list of names):
    /// those it names, else the default.
    fn faces_for(&self, stack: &str) -> Vec<usize> {
        let named: Vec<usize> = stack
            .split(',')
            .map(str::trim)
            .take(MAX_STACK)
            .filter_map(|name| self.faces.iter().position(|f| f.name == name))
            .collect();
        if !named.is_empty() {
            return named;
        }
        self.faces
            .iter()
            .position(|f| f.name == DEFAULT_FONTSTACK)
            .or((!self.faces.is_empty()).then_some(0))
            .into_iter()
            .collect()
    }

    /// The glyphs of `stack` from `start` to `start + 255`, encoded; each
    /// code point from the first face of the stack that has it.
    pub async fn glyphs(&self, stack: &str, start: u32) -> Result<Vec<u8>, AppError> {
        let faces = self.faces_for(stack);
        if faces.is_empty() {
            return Err(AppError::not_found(
                "this service has no fonts for map labels (see FONTS_DIR)",
            ));
        }
        let mut merged = Fontstack {
            name: stack.to_string(),
            range: format!("{start}-{}", start + 255),
            glyphs: Vec::new(),
        };
        for face in faces {
            // Concurrent requests for one range wait for the first one's cut.
            let cut = match self.ranges.get_value_or_guard_async(&(face, start)).await {
                Ok(cut) => cut,
                Err(guard) => {
                    let _permit = self.cutting.acquire().await.map_err(AppError::internal)?;
                    let (path, index) = (self.faces[face].path.clone(), self.faces[face].index);
                    let cut = tokio::task::spawn_blocking(move || cut_range(&path, index, start))
                        .await
                        .map_err(AppError::internal)?
                        .map_err(|e| AppError::internal(format!("glyphs could not be cut: {e}")))?;
                    let cut = Arc::new(cut);
                    let _ = guard.insert(cut.clone());
                    cut
                }
            };
            for glyph in &cut.glyphs {
                if !merged.glyphs.iter().any(|g| g.id == glyph.id) {
                    merged.glyphs.push(glyph.clone());
                }
            }
        }
        Ok(Glyphs { stacks: vec![merged] }.encode_to_vec())
    }
}

fn cut_range(path: &Path, index: isize, start: u32) -> Result<Fontstack, Box<dyn std::error::Error + Send + Sync>> {
    let library = freetype::Library::init()?;
    let face = library.new_face(path, index)?;
    Ok(glyph_range_for_face(
        &face,
        start,
        start + 255,
        GLYPH_SIZE,
        SDF_RADIUS,
        SDF_CUTOFF,
    )?)
}

fn faces_in(dir: &Path) -> Result<Vec<Face>, Box<dyn std::error::Error>> {
    let library = freetype::Library::init()?;
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| {
            path.extension()
                .and_then(|e| e.to_str())
                .is_some_and(|e| matches!(e.to_ascii_lowercase().as_str(), "ttf" | "otf" | "ttc" | "otc"))
        })
        .collect();
    files.sort();
    let mut faces = Vec::new();
    for path in files {
        let Ok(first) = library.new_face(&path, 0) else {
            continue;
        };
        for index in 0..first.num_faces() as isize {
            let Ok(face) = library.new_face(&path, index) else {
                continue;
            };
            let Some(family) = face.family_name() else { continue };
            let name = match face.style_name() {
                Some(style) => format!("{family} {style}"),
                None => family,
            };
            if !faces.iter().any(|f: &Face| f.name == name) {
                faces.push(Face {
                    name,
                    path: path.clone(),
                    index,
                });
            }
        }
    }
    Ok(faces)
}

/// A glyph range as the document names it: `start-end.pbf` (or without
/// `.pbf`) for each of the 256 ranges `range_start` takes.
pub struct GlyphRange;

impl utoipa::PartialSchema for GlyphRange {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        let ranges = (0..256u32).map(|i| format!("{}-{}", i * 256, i * 256 + 255));
        let names: Vec<String> = ranges.flat_map(|r| [format!("{r}.pbf"), r]).collect();
        utoipa::openapi::ObjectBuilder::new()
            .schema_type(utoipa::openapi::schema::Type::String)
            .enum_values(Some(names))
            .into()
    }
}

impl utoipa::ToSchema for GlyphRange {}

/// The first code point of a range written `start-end` (`.pbf` optional).
pub fn range_start(range: &str) -> Result<u32, AppError> {
    // A range outside the 256 there are is the caller's mistake (a
    // `glyphs` template filled wrongly): a 400. A 404 is kept for a
    // well-formed request for what is not there (no fonts at all).
    let bad = || {
        AppError::bad_request(format!(
            "{range:?} is not a glyph range: ask for start-end.pbf, start a multiple of 256 below 65536 and end start + 255"
        ))
    };
    let range = range.strip_suffix(".pbf").unwrap_or(range);
    let (start, end) = range.split_once('-').ok_or_else(bad)?;
    let (start, end): (u32, u32) = (start.parse().map_err(|_| bad())?, end.parse().map_err(|_| bad())?);
    if start % 256 != 0 || start > 65280 || end != start + 255 {
        return Err(bad());
    }
    Ok(start)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_range_the_document_names_is_taken() {
        let schema = serde_json::to_value(<GlyphRange as utoipa::PartialSchema>::schema()).unwrap();
        let names = schema["enum"].as_array().unwrap();
        assert_eq!(names.len(), 512);
        for name in names {
            assert!(range_start(name.as_str().unwrap()).is_ok(), "{name}");
        }
    }

    #[test]
    fn ranges_are_whole_blocks_of_256() {
        assert_eq!(range_start("0-255.pbf").ok(), Some(0));
        assert_eq!(range_start("256-511").ok(), Some(256));
        assert_eq!(range_start("65280-65535.pbf").ok(), Some(65280));
        for bad in ["1-256.pbf", "0-511.pbf", "65536-65791.pbf", "a-b.pbf", "0.pbf", "-255"] {
            assert_eq!(range_start(bad).err().map(|e| e.status().as_u16()), Some(400), "{bad}");
        }
    }
}
