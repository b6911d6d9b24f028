//! A job's ingest report (`catalog_shared::ingest_report`): the
//! assumptions made from a layer's plan and its reading, the quarantine
//! limit, and the report kept with the job (`GET /api/jobs/{id}/report`).
use catalog_shared::{
    ingest_report::{AssumptionCode, IngestReport},
    uploads::SourceFormat,
};

use crate::{
    context::{JobContext, JobError},
    load::LoadedLayer,
    plan::{GeomTarget, LayerJob},
    reader::postgis_type_name,
};

/// Names listed in a message before "and N more".
const LISTED: usize = 20;

fn listed(items: Vec<String>) -> String {
    let more = items.len().saturating_sub(LISTED);
    let mut text = items.into_iter().take(LISTED).collect::<Vec<_>>().join(", ");
    if more > 0 {
        text.push_str(&format!(" and {more} more"));
    }
    text
}

/// What the service assumed about a layer, from its plan and from reading
/// it, added to the layer's report.
pub fn note_assumptions(layer: &LayerJob, loaded: &mut LoadedLayer) {
    let (plan, format, stats) = (&layer.plan, layer.source.format, &loaded.stats);
    let report = &mut loaded.report;
    let name = Some(layer.key.as_str());
    if plan.crs_assumed {
        let what = match format {
            SourceFormat::Shapefile => "the shapefile has no .prj",
            SourceFormat::Csv => "a CSV names no coordinate system",
            _ => "the layer declares no coordinate system",
        };
        report.assume(
            AssumptionCode::CrsAssumedWgs84,
            name,
            format!(
                "{what}: its coordinates were taken as WGS 84 longitude and latitude (EPSG:4326). If they are not, \
                 choose the right CRS (the upload's srid) and load it again."
            ),
        );
    }
    let renamed: Vec<String> = plan
        .fields
        .iter()
        .filter(|f| f.name != f.original)
        .map(|f| format!("{:?} → {}", f.original, f.name))
        .collect();
    if !renamed.is_empty() {
        report.assume(
            AssumptionCode::ColumnsRenamed,
            name,
            format!(
                "columns renamed to names SQL and OGC clients take (the originals are kept in the dataset's column \
                 info): {}",
                listed(renamed)
            ),
        );
    }
    if format == SourceFormat::Csv && !plan.fields.is_empty() {
        let types: Vec<String> = plan
            .fields
            .iter()
            .map(|f| format!("{} {}", f.name, f.pg.sql()))
            .collect();
        report.assume(
            AssumptionCode::CsvTypesInferred,
            name,
            format!(
                "a CSV has no column types: each was chosen from every value of the column (one value that is not \
                 a number makes it text, so nothing is changed): {}",
                listed(types)
            ),
        );
    }
    if stats.latin1_values > 0 {
        report.assume(
            AssumptionCode::EncodingGuessed,
            name,
            format!(
                "{} text value(s) were not valid UTF-8 and were read as Latin-1 (ISO-8859-1); if they look wrong, \
                 name the file's code page (a .cpg next to a shapefile's .dbf) and load it again",
                stats.latin1_values
            ),
        );
    }
    if stats.promoted > 0 {
        let multi = match plan.target {
            GeomTarget::Fixed(t) => postgis_type_name(t),
            GeomTarget::Generic => loaded.geometry_type.as_str(),
        };
        report.assume(
            AssumptionCode::GeometryPromoted,
            name,
            format!(
                "{} single geometries were stored as {multi} (one part each), so the layer has one geometry type",
                stats.promoted
            ),
        );
    }
}

/// Keeps the report with the job, replacing an earlier run's.
pub async fn store(ctx: &JobContext, report: &IngestReport) -> Result<(), JobError> {
    sqlx::query(
        "INSERT INTO job_reports (job_id, report) VALUES ($1, $2)
         ON CONFLICT (job_id) DO UPDATE SET report = excluded.report, created_at = now()",
    )
    .bind(ctx.job_id)
    .bind(sqlx::types::Json(report))
    .execute(&ctx.deps.pool)
    .await?;
    Ok(())
}

/// The failure of a layer that quarantined more of its rows than
/// `INGEST_MAX_QUARANTINE_PERCENT` allows, or that has no row to load.
pub fn refusal(ctx: &JobContext, layer: &str, report: &IngestReport) -> Option<JobError> {
    let limit = ctx.deps.config.ingest_max_quarantine_percent;
    let see = format!(
        "the job's report (/api/jobs/{}/report) lists the rows and why",
        ctx.job_id
    );
    if report.rows_read > 0 && report.rows_loaded == 0 {
        return Some(JobError::Invalid(format!(
            "layer {layer}: none of its {} rows could be loaded, so nothing was published; {see}",
            report.rows_read
        )));
    }
    let share = report.quarantined_percent();
    (share > limit).then(|| {
        JobError::Invalid(format!(
            "layer {layer}: {share:.1}% of its rows ({} of {}) were quarantined, over the limit of {limit}% \
             (INGEST_MAX_QUARANTINE_PERCENT), so nothing was published; {see}",
            report.rows_quarantined, report.rows_read
        ))
    })
}
