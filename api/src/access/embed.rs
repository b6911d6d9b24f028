//! Embed tokens as a credential: a live token lets its bearer read one
//! map, its style, and the data of those of its layers the map's owner may
//! still see. (Making and revoking them is `maps::embed`.)
use sqlx::PgPool;
use uuid::Uuid;

use super::{Capability, policy::visible_datasets_sql};

/// The capability of a live embed token: its map, and those of the map's
/// datasets its creator may still see now (a grant revoked or a dataset
/// withdrawn since the token was made is not handed on).
pub async fn capability(pool: &PgPool, token: &str) -> Result<Option<Capability>, sqlx::Error> {
    let visible = visible_datasets_sql("d", "u.id", "(u.role = 'admin')");
    let sql = format!(
        "SELECT e.map_id, coalesce(array_agg(d.id) FILTER (WHERE d.id IS NOT NULL AND {visible}), '{{}}')
         FROM map_embed_tokens e
         JOIN users u ON u.id = e.created_by AND u.status = 'active' AND u.is_active
         LEFT JOIN map_layers l ON l.map_id = e.map_id
         LEFT JOIN datasets d ON d.id = l.dataset_id
         WHERE e.token_hash = sha256($1) AND e.revoked_at IS NULL AND (e.expires_at IS NULL OR e.expires_at > now())
         GROUP BY e.map_id"
    );
    let found: Option<(Uuid, Vec<Uuid>)> = sqlx::query_as(sqlx::AssertSqlSafe(sql))
        .bind(token.as_bytes())
        .fetch_optional(pool)
        .await?;
    Ok(found.map(|(map_id, datasets)| Capability::Embed { map_id, datasets }))
}

/// Whether an embed capability covers a read of this path: the map itself,
/// its style, and the collections, items, features and tiles of its datasets.
pub fn covers(capability: &Capability, path: &str) -> bool {
    let Capability::Embed { map_id, datasets } = capability else {
        return false;
    };
    let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    let id = |s: &str| s.parse::<Uuid>().ok();
    match segments.as_slice() {
        ["api", "maps", map] | ["api", "maps", map, "style.json"] => id(map) == Some(*map_id),
        ["api", "collections", dataset, ..] | ["api", "tiles", dataset, _, ..] => {
            id(dataset).is_some_and(|d| datasets.contains(&d))
        }
        ["api", "datasets", dataset, "features"] => id(dataset).is_some_and(|d| datasets.contains(&d)),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embeds_cover_their_map_and_its_data_only() {
        let (map_id, dataset, other) = (Uuid::now_v7(), Uuid::now_v7(), Uuid::now_v7());
        let capability = Capability::Embed {
            map_id,
            datasets: vec![dataset],
        };
        for path in [
            format!("/api/maps/{map_id}"),
            format!("/api/maps/{map_id}/style.json"),
            format!("/api/collections/{dataset}/items"),
            format!("/api/collections/{dataset}/items/7"),
            format!("/api/tiles/{dataset}/1/0/0.pbf"),
            format!("/api/datasets/{dataset}/features"),
        ] {
            assert!(covers(&capability, &path), "{path}");
        }
        for path in [
            format!("/api/maps/{map_id}/shares"),
            format!("/api/maps/{other}"),
            format!("/api/collections/{other}/items"),
            format!("/api/datasets/{dataset}"),
            format!("/api/datasets/{dataset}/grants"),
            "/api/maps".to_string(),
        ] {
            assert!(!covers(&capability, &path), "{path}");
        }
    }
}
