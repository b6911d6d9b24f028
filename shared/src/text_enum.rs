//! Closed sets of names kept as text: a `text` column under a CHECK
//! constraint, a field of a job payload or of the API's JSON.

/// Declares such an enum with each variant's name written once: serde,
/// sqlx, utoipa (when the enum derives `ToSchema`), `as_str` and `parse`
/// all take it from there, so none of them can spell it otherwise.
macro_rules! text_enum {
    (
        $(#[$attr:meta])*
        pub enum $name:ident {
            // `tt`, not `literal`: utoipa reads a rename only from a bare
            // string token, not from the group a `literal` fragment makes.
            $($(#[$variant_attr:meta])* $variant:ident = $text:tt,)+
        }
    ) => {
        $(#[$attr])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize, sqlx::Type)]
        #[sqlx(type_name = "text")]
        pub enum $name {
            $($(#[$variant_attr])* #[serde(rename = $text)] #[sqlx(rename = $text)] $variant,)+
        }

        impl $name {
            /// Every variant, in the order declared.
            pub const ALL: &'static [Self] = &[$(Self::$variant),+];

            pub fn as_str(self) -> &'static str {
                match self {
                    $(Self::$variant => $text,)+
                }
            }

            /// The variant of that name, if one has it.
            pub fn parse(name: &str) -> Option<Self> {
                Self::ALL.iter().copied().find(|v| v.as_str() == name)
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

pub(crate) use text_enum;

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use sqlx::{Connection, PgConnection, postgres::PgConnectOptions};

    use crate::{
        auth::{AccountStatus, Permission, ProviderType, Role},
        connectors::CredentialMethod,
        datasets::{DatasetKind, DatasetVisibility, PublicationStatus, StorageTier},
        history::VersionKind,
        jobs::JobStatus,
        maps::MapVisibility,
    };

    /// The values the CHECK constraint on a text column allows, as
    /// PostgreSQL states it (`CHECK ((c = ANY (ARRAY['a'::text, …])))`).
    async fn allowed(db: &mut PgConnection, table: &str, column: &str) -> BTreeSet<String> {
        let checks: Vec<String> = sqlx::query_scalar(
            "SELECT pg_get_constraintdef(c.oid) FROM pg_constraint c
             JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = c.conkey[1]
             WHERE c.contype = 'c' AND c.conrelid = $1::regclass AND cardinality(c.conkey) = 1 AND a.attname = $2",
        )
        .bind(table)
        .bind(column)
        .fetch_all(db)
        .await
        .unwrap();
        assert_eq!(checks.len(), 1, "{table}.{column} has one CHECK of its own: {checks:?}");
        checks[0].split('\'').skip(1).step_by(2).map(str::to_string).collect()
    }

    fn names(all: &[impl std::fmt::Display]) -> BTreeSet<String> {
        all.iter().map(ToString::to_string).collect()
    }

    /// Each enum kept in a column names exactly what the column allows
    /// after every migration: a value the database allows and the enum
    /// lacks would fail to read, one the enum has and the database
    /// refuses would fail to write.
    #[tokio::test]
    async fn each_enum_kept_in_a_column_names_exactly_what_its_check_allows() {
        let admin_url = std::env::var("TEST_ADMIN_DATABASE_URL")
            .expect("TEST_ADMIN_DATABASE_URL names a PostgreSQL database (scripts/test.sh sets it)");
        let mut admin = PgConnection::connect(&admin_url).await.unwrap();
        let name = format!("text_enums_{}", uuid::Uuid::new_v4().simple());
        sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
            .execute(&mut admin)
            .await
            .unwrap();
        let options: PgConnectOptions = admin_url.parse::<PgConnectOptions>().unwrap().database(&name);
        let pool = sqlx::PgPool::connect_with(options).await.unwrap();
        crate::db::migrate(&pool).await.unwrap();
        let mut db = pool.acquire().await.unwrap();
        let mut compared = Vec::new();
        for (table, column, names) in [
            ("datasets", "visibility", names(DatasetVisibility::ALL)),
            ("datasets", "status", names(PublicationStatus::ALL)),
            ("datasets", "kind", names(DatasetKind::ALL)),
            ("datasets", "storage", names(StorageTier::ALL)),
            ("maps", "visibility", names(MapVisibility::ALL)),
            ("connector_credentials", "method", names(CredentialMethod::ALL)),
            ("dataset_versions", "kind", names(VersionKind::ALL)),
            ("users", "role", names(Role::ALL)),
            ("users", "status", names(AccountStatus::ALL)),
            ("dataset_grants", "permission", names(Permission::ALL)),
            ("oauth_providers", "provider_type", names(ProviderType::ALL)),
            ("jobs", "status", names(JobStatus::ALL)),
        ] {
            compared.push((table, column, allowed(&mut db, table, column).await, names));
        }
        drop(db);
        pool.close().await;
        sqlx::query(sqlx::AssertSqlSafe(format!("DROP DATABASE {name}")))
            .execute(&mut admin)
            .await
            .unwrap();
        for (table, column, allowed, names) in compared {
            assert_eq!(
                allowed, names,
                "{table}.{column}: what the CHECK allows, then what the enum names"
            );
        }
    }
}
