//! Which GDAL sources an uploaded file holds. Zips are inspected before
//! GDAL sees them: unsafe member paths and incomplete shapefile sets are
//! refused with a message that says what is wrong.
use std::{collections::HashSet, fs::File, path::Path};

use catalog_shared::uploads::{ACCEPTED, SourceFormat, format_of};

#[derive(Debug, Clone)]
pub struct Source {
    /// What GDAL opens (a plain path or a `/vsizip/` path).
    pub gdal_path: String,
    pub format: SourceFormat,
    /// The member name inside a zip, for messages and layer names.
    pub label: String,
}

pub fn sources_of(path: &Path, filename: &str) -> Result<Vec<Source>, String> {
    let lower = filename.to_ascii_lowercase();
    if lower.ends_with(".zip") {
        return zip_sources(path);
    }
    match format_of(&lower) {
        Some(SourceFormat::Shapefile) => Err(
            "a shapefile must be uploaded as a .zip holding its .shp, .shx and .dbf (and .prj, .cpg when present)"
                .into(),
        ),
        Some(format) => Ok(vec![Source {
            gdal_path: path.display().to_string(),
            format,
            label: filename.to_string(),
        }]),
        None => Err(format!("{filename} is not a supported file; upload {ACCEPTED}")),
    }
}

fn is_safe_member(name: &str) -> bool {
    !name.starts_with('/')
        && !name.starts_with('\\')
        && !name.contains(':')
        && !name.split(['/', '\\']).any(|part| part == "..")
}

fn zip_sources(path: &Path) -> Result<Vec<Source>, String> {
    let file = File::open(path).map_err(|e| format!("the upload could not be read: {e}"))?;
    let mut archive = zip::ZipArchive::new(file)
        .map_err(|e| format!("the file is not a readable zip archive (truncated or corrupt?): {e}"))?;
    let mut names = Vec::with_capacity(archive.len());
    for i in 0..archive.len() {
        let entry = archive
            .by_index_raw(i)
            .map_err(|e| format!("the zip archive is corrupt: {e}"))?;
        let name = entry.name().to_string();
        if !is_safe_member(&name) {
            return Err(format!(
                "the zip archive holds an unsafe path {name:?}; paths must stay inside the archive"
            ));
        }
        if !entry.is_dir() && !name.starts_with("__MACOSX/") {
            names.push(name);
        }
    }
    let lower: HashSet<String> = names.iter().map(|n| n.to_ascii_lowercase()).collect();
    let mut sources = Vec::new();
    for name in &names {
        let Some(format) = format_of(name) else {
            continue;
        };
        if format == SourceFormat::Shapefile {
            let stem = &name[..name.len() - 4];
            let missing: Vec<&str> = ["shx", "dbf"]
                .into_iter()
                .filter(|ext| !lower.contains(&format!("{stem}.{ext}").to_ascii_lowercase()))
                .collect();
            if !missing.is_empty() {
                let missing: Vec<String> = missing.iter().map(|e| format!(".{e}")).collect();
                return Err(format!(
                    "the shapefile {name} is incomplete: the zip lacks its {}",
                    missing.join(" and ")
                ));
            }
        }
        sources.push(Source {
            gdal_path: format!("/vsizip/{}/{}", path.display(), name),
            format,
            label: name.clone(),
        });
    }
    if sources.is_empty() {
        return Err(format!(
            "the zip archive holds no spatial file; it should hold {ACCEPTED}"
        ));
    }
    Ok(sources)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn member_paths_must_stay_inside() {
        assert!(is_safe_member("data/roads.shp"));
        assert!(!is_safe_member("../etc/passwd"));
        assert!(!is_safe_member("a/../../b.shp"));
        assert!(!is_safe_member("/abs.shp"));
        assert!(!is_safe_member("C:\\x.shp"));
    }
}
