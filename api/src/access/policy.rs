//! Every visibility and capability decision: who may read, change or share
//! a dataset or a map. Handlers ask through `access::datasets` (datasets)
//! and `maps::store` (maps); listings filter with the one SQL condition here, which
//! a test holds to the same answers as the Rust rule.
use catalog_shared::{
    AppError,
    auth::Permission,
    datasets::{DatasetVisibility, PublicationStatus},
    maps::MapVisibility,
};
use uuid::Uuid;

use super::Caller;
use crate::dataset_record::Dataset;

/// The dataset visibility a text field (a form field, a connector's
/// setting) names, or 422 naming the choices.
pub fn visibility_named(name: &str) -> Result<DatasetVisibility, AppError> {
    DatasetVisibility::parse(name).ok_or_else(|| {
        let names: Vec<&str> = DatasetVisibility::ALL.iter().map(|v| v.as_str()).collect();
        AppError::unprocessable(format!("visibility must be one of {}", names.join(", ")))
    })
}

/// What a dataset decision depends on.
#[derive(Clone, Copy, Debug)]
pub struct DatasetFacts {
    pub id: Uuid,
    pub owner: Option<Uuid>,
    pub visibility: DatasetVisibility,
    /// Status `ready`: unpublished datasets are seen by owner and admins only.
    pub published: bool,
    /// The caller's grant, when it has one.
    pub grant: Option<Permission>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DatasetAction {
    Read,
    /// Edit, reupload, delete, publish.
    Write,
    /// Grant or revoke others' access.
    ManageGrants,
}

fn owns(caller: &Caller, owner: Option<Uuid>) -> bool {
    caller.user_id().is_some() && caller.user_id() == owner
}

/// Whether the caller sees the dataset at all. Mirrors `visible_datasets_sql`.
fn sees_dataset(caller: &Caller, facts: &DatasetFacts) -> bool {
    let signed_in = caller.user().is_some();
    caller.is_admin()
        || caller.capability_reads_dataset(facts.id)
        || owns(caller, facts.owner)
        || (facts.published
            && match facts.visibility {
                DatasetVisibility::Public => true,
                DatasetVisibility::Internal => signed_in,
                DatasetVisibility::Restricted => signed_in && facts.grant.is_some(),
                DatasetVisibility::Private => false,
            })
}

/// The one dataset rule. A caller that may not see the dataset gets 404,
/// so it learns nothing of what exists; one that sees it but may not act
/// gets 401 (anonymous) or 403 naming who may.
pub fn dataset_decision(caller: &Caller, facts: &DatasetFacts, action: DatasetAction) -> Result<(), AppError> {
    if !sees_dataset(caller, facts) {
        return Err(AppError::not_found(format!("no dataset {}", facts.id)));
    }
    match action {
        DatasetAction::Read => Ok(()),
        DatasetAction::Write => {
            let user = caller.editor()?;
            if user.is_admin() || owns(caller, facts.owner) || facts.grant == Some(Permission::Write) {
                Ok(())
            } else {
                Err(AppError::forbidden(
                    "only the dataset's owner, a user granted write access, or an admin may change it",
                ))
            }
        }
        DatasetAction::ManageGrants => {
            let user = caller.signed_in()?;
            if user.is_admin() || owns(caller, facts.owner) {
                Ok(())
            } else {
                Err(AppError::forbidden(
                    "only the dataset's owner or an admin may manage its grants",
                ))
            }
        }
    }
}

/// Whether anyone at all, signed in or not, may read a dataset of this
/// visibility and publication status: its tiles may be cached by shared
/// caches and its tile links need no signature. The anonymous arm of
/// `sees_dataset`.
pub fn readable_by_anyone(visibility: DatasetVisibility, status: PublicationStatus) -> bool {
    visibility == DatasetVisibility::Public && status == PublicationStatus::Ready
}

/// Whether deciding whether the caller may read needs its grant: only on a
/// restricted dataset, and only for a signed-in caller who is neither admin
/// nor owner.
pub fn read_needs_grant(caller: &Caller, owner: Option<Uuid>, visibility: DatasetVisibility) -> bool {
    visibility == DatasetVisibility::Restricted && caller.user().is_some() && !caller.is_admin() && !owns(caller, owner)
}

/// SQL condition for the rows of `datasets` (under the name or alias
/// `table`) that a caller sees, given SQL expressions for its user id
/// (NULL when anonymous) and whether it is an admin. Listings use it;
/// capabilities do not widen listings.
pub fn visible_datasets_sql(table: &str, user: &str, admin: &str) -> String {
    format!(
        "({admin} OR ({user} IS NOT NULL AND {table}.created_by = {user})
          OR ({table}.status = '{ready}' AND ({table}.visibility = '{public}'
              OR ({user} IS NOT NULL AND ({table}.visibility = '{internal}'
                  OR ({table}.visibility = '{restricted}' AND EXISTS (
                      SELECT 1 FROM dataset_grants g WHERE g.dataset_id = {table}.id AND g.user_id = {user})))))))",
        ready = PublicationStatus::Ready,
        public = DatasetVisibility::Public,
        internal = DatasetVisibility::Internal,
        restricted = DatasetVisibility::Restricted,
    )
}

/// The listing condition with `$1` the caller's id and `$2` whether it is an admin.
pub fn visible_to_caller(table: &str) -> String {
    visible_datasets_sql(table, "$1::uuid", "$2")
}

/// What a map decision depends on (maps have no grants and no restricted level).
#[derive(Clone, Copy, Debug)]
pub struct MapFacts {
    pub id: Uuid,
    pub owner: Option<Uuid>,
    pub visibility: MapVisibility,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MapAction {
    Read,
    /// Edit, delete, share, hand out embed tokens.
    Write,
}

/// The one map rule: 404 to who may not see it; changes for its owner
/// (editor role) or an admin.
pub fn map_decision(caller: &Caller, facts: &MapFacts, action: MapAction) -> Result<(), AppError> {
    let signed_in = caller.user().is_some();
    let sees = caller.is_admin()
        || caller.capability_reads_map(facts.id)
        || match facts.visibility {
            MapVisibility::Public => true,
            MapVisibility::Internal => signed_in,
            MapVisibility::Private => owns(caller, facts.owner),
        };
    if !sees {
        return Err(AppError::not_found(format!("no map {}", facts.id)));
    }
    if action == MapAction::Read {
        return Ok(());
    }
    let user = caller.editor()?;
    if user.is_admin() || owns(caller, facts.owner) {
        Ok(())
    } else {
        Err(AppError::forbidden("only the map's owner or an admin may change it"))
    }
}

/// SQL condition for the rows of `maps` a caller sees, with `$1` its id
/// and `$2` whether it is an admin. Mirrors `map_decision` for reads.
pub fn visible_maps_sql() -> String {
    format!(
        "($2 OR visibility = '{public}' OR ($1::uuid IS NOT NULL AND (visibility = '{internal}' OR created_by = $1)))",
        public = MapVisibility::Public,
        internal = MapVisibility::Internal,
    )
}

/// Published public datasets may be cached by anyone, for a year when the
/// URL names the data version the tile was cut from (its bytes never
/// change; a table registered in place changes without new versions);
/// others only by the viewer.
pub fn cache_control(dataset: &Dataset, at_current_version: bool) -> &'static str {
    if !readable_by_anyone(dataset.visibility, dataset.status) {
        "private, max-age=60"
    } else if at_current_version && !dataset.is_registered {
        "public, max-age=31536000, immutable"
    } else {
        "public, max-age=300"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::access::{Capability, KeyScope, User};

    const OWNER: Uuid = Uuid::from_u128(1);
    const DATASET: Uuid = Uuid::from_u128(100);
    const OTHER_DATASET: Uuid = Uuid::from_u128(101);

    fn user(id: u128, role: &str, key_scope: Option<KeyScope>) -> Caller {
        Caller {
            user: Some(User {
                id: Uuid::from_u128(id),
                role: catalog_shared::auth::Role::parse(role).expect("a role's name"),
                token_version: 0,
            }),
            key_scope,
            ..Caller::default()
        }
    }

    fn capability(capability: Capability) -> Caller {
        Caller {
            capability: Some(capability),
            ..Caller::default()
        }
    }

    /// Every caller kind a request can resolve to, by name.
    fn callers() -> Vec<(&'static str, Caller)> {
        vec![
            ("anonymous", Caller::default()),
            ("viewer", user(2, "viewer", None)),
            ("viewer-read-key", user(2, "viewer", Some(KeyScope::ReadOnly))),
            ("editor", user(3, "editor", None)),
            ("editor-full-key", user(3, "editor", Some(KeyScope::Full))),
            ("owner", user(1, "editor", None)),
            ("owner-viewer", user(1, "viewer", None)),
            ("admin", user(4, "admin", None)),
            (
                "tiles-template",
                capability(Capability::Tiles {
                    dataset: DATASET,
                    expires: i64::MAX,
                }),
            ),
            (
                "embed-token",
                capability(Capability::Embed {
                    map_id: Uuid::from_u128(200),
                    datasets: vec![DATASET],
                }),
            ),
            (
                "other-capability",
                capability(Capability::Tiles {
                    dataset: OTHER_DATASET,
                    expires: i64::MAX,
                }),
            ),
            ("asset-link", capability(Capability::Asset { dataset: DATASET })),
            (
                "other-asset-link",
                capability(Capability::Asset { dataset: OTHER_DATASET }),
            ),
        ]
    }

    const VISIBILITIES: [DatasetVisibility; 4] = [
        DatasetVisibility::Public,
        DatasetVisibility::Internal,
        DatasetVisibility::Restricted,
        DatasetVisibility::Private,
    ];
    const GRANTS: [Option<Permission>; 3] = [None, Some(Permission::Read), Some(Permission::Write)];

    /// Expected status per caller kind and action over the grid
    /// published x visibility (public, internal, restricted, private) x
    /// the caller's grant (none, read, write): 2 = allowed, 1 = 401,
    /// 3 = 403, 4 = 404. Callers without a user have no grant, so their
    /// three columns agree.
    const DATASET_TABLE: &str = "
        #                          published                  unpublished
        #                  pub internal restr private   pub internal restr private
        anonymous        R  222 444 444 444   444 444 444 444
        anonymous        W  111 444 444 444   444 444 444 444
        anonymous        G  111 444 444 444   444 444 444 444
        viewer           R  222 222 422 444   444 444 444 444
        viewer           W  333 333 433 444   444 444 444 444
        viewer           G  333 333 433 444   444 444 444 444
        viewer-read-key  R  222 222 422 444   444 444 444 444
        viewer-read-key  W  333 333 433 444   444 444 444 444
        viewer-read-key  G  333 333 433 444   444 444 444 444
        editor           R  222 222 422 444   444 444 444 444
        editor           W  332 332 432 444   444 444 444 444
        editor           G  333 333 433 444   444 444 444 444
        editor-full-key  R  222 222 422 444   444 444 444 444
        editor-full-key  W  332 332 432 444   444 444 444 444
        editor-full-key  G  333 333 433 444   444 444 444 444
        owner            R  222 222 222 222   222 222 222 222
        owner            W  222 222 222 222   222 222 222 222
        owner            G  222 222 222 222   222 222 222 222
        owner-viewer     R  222 222 222 222   222 222 222 222
        owner-viewer     W  333 333 333 333   333 333 333 333
        owner-viewer     G  222 222 222 222   222 222 222 222
        admin            R  222 222 222 222   222 222 222 222
        admin            W  222 222 222 222   222 222 222 222
        admin            G  222 222 222 222   222 222 222 222
        tiles-template   R  222 222 222 222   222 222 222 222
        tiles-template   W  111 111 111 111   111 111 111 111
        tiles-template   G  111 111 111 111   111 111 111 111
        embed-token      R  222 222 222 222   222 222 222 222
        embed-token      W  111 111 111 111   111 111 111 111
        embed-token      G  111 111 111 111   111 111 111 111
        other-capability R  222 444 444 444   444 444 444 444
        other-capability W  111 444 444 444   444 444 444 444
        other-capability G  111 444 444 444   444 444 444 444
        asset-link       R  222 222 222 222   222 222 222 222
        asset-link       W  111 111 111 111   111 111 111 111
        asset-link       G  111 111 111 111   111 111 111 111
        other-asset-link R  222 444 444 444   444 444 444 444
        other-asset-link W  111 444 444 444   444 444 444 444
        other-asset-link G  111 444 444 444   444 444 444 444
    ";

    fn code(result: Result<(), AppError>) -> char {
        match result.map_err(|e| e.status().as_u16()) {
            Ok(()) => '2',
            Err(401) => '1',
            Err(403) => '3',
            Err(404) => '4',
            Err(other) => panic!("unexpected status {other}"),
        }
    }

    fn facts(visibility: DatasetVisibility, published: bool, grant: Option<Permission>) -> DatasetFacts {
        DatasetFacts {
            id: DATASET,
            owner: Some(OWNER),
            visibility,
            published,
            grant,
        }
    }

    #[test]
    fn dataset_decisions_follow_the_truth_table() {
        let callers = callers();
        let mut rows = 0;
        for line in DATASET_TABLE
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
        {
            let mut fields = line.split_whitespace();
            let (name, action) = (fields.next().unwrap(), fields.next().unwrap());
            let expected: String = fields.collect();
            let caller = &callers.iter().find(|(n, _)| *n == name).expect(name).1;
            let action = match action {
                "R" => DatasetAction::Read,
                "W" => DatasetAction::Write,
                _ => DatasetAction::ManageGrants,
            };
            let mut actual = String::new();
            for published in [true, false] {
                for visibility in VISIBILITIES {
                    for grant in GRANTS {
                        // A grant belongs to a user; callers without one have none.
                        let grant = grant.filter(|_| caller.user().is_some());
                        actual.push(code(dataset_decision(
                            caller,
                            &facts(visibility, published, grant),
                            action,
                        )));
                    }
                }
            }
            assert_eq!(actual, expected, "{name} {action:?}");
            rows += 1;
        }
        assert_eq!(rows, callers.len() * 3, "every caller kind has its three rows");
    }

    /// Expected status per caller kind over the visibilities public,
    /// internal, private of a map owned by `owner`: read, then write.
    const MAP_TABLE: &str = "
        anonymous        244 144
        viewer           224 334
        editor           224 334
        owner            222 222
        owner-viewer     222 333
        admin            222 222
        embed-token      222 111
        tiles-template   244 144
        asset-link       244 144
    ";

    #[test]
    fn map_decisions_follow_the_truth_table() {
        let callers = callers();
        let embed_map = Uuid::from_u128(200);
        for line in MAP_TABLE.lines().map(str::trim).filter(|l| !l.is_empty()) {
            let mut fields = line.split_whitespace();
            let name = fields.next().unwrap();
            let expected: String = fields.collect();
            let caller = &callers.iter().find(|(n, _)| *n == name).expect(name).1;
            let mut actual = String::new();
            for action in [MapAction::Read, MapAction::Write] {
                for visibility in [MapVisibility::Public, MapVisibility::Internal, MapVisibility::Private] {
                    let facts = MapFacts {
                        id: embed_map,
                        owner: Some(OWNER),
                        visibility,
                    };
                    actual.push(code(map_decision(caller, &facts, action)));
                }
            }
            assert_eq!(actual, expected, "{name}");
        }
    }

    /// The listing condition and the Rust rule agree on every caller kind
    /// a listing serves (capabilities do not widen listings) and every
    /// combination of visibility, status and grant, evaluated by the real
    /// database.
    #[tokio::test]
    async fn listing_condition_agrees_with_the_rule() {
        let url = std::env::var("TEST_ADMIN_DATABASE_URL")
            .expect("TEST_ADMIN_DATABASE_URL names a PostgreSQL database (scripts/test.sh sets it)");
        let pool = sqlx::PgPool::connect(&url).await.expect("connect");
        let mut conn = pool.acquire().await.unwrap();
        for statement in [
            "CREATE TEMP TABLE datasets (id uuid, created_by uuid, status text, visibility text)",
            "CREATE TEMP TABLE dataset_grants (dataset_id uuid, user_id uuid, permission text)",
        ] {
            sqlx::query(statement).execute(&mut *conn).await.unwrap();
        }
        let condition = visible_to_caller("datasets");
        let mut checked = 0;
        for (name, caller) in callers().into_iter().filter(|(_, c)| c.capability.is_none()) {
            for published in [true, false] {
                for visibility in VISIBILITIES {
                    for grant in GRANTS {
                        let grant = grant.filter(|_| caller.user().is_some());
                        sqlx::query("TRUNCATE datasets, dataset_grants")
                            .execute(&mut *conn)
                            .await
                            .unwrap();
                        let status = if published {
                            PublicationStatus::Ready
                        } else {
                            PublicationStatus::Unpublished
                        };
                        sqlx::query("INSERT INTO datasets VALUES ($1, $2, $3, $4)")
                            .bind(DATASET)
                            .bind(OWNER)
                            .bind(status)
                            .bind(visibility)
                            .execute(&mut *conn)
                            .await
                            .unwrap();
                        if let (Some(grant), Some(user)) = (grant, caller.user_id()) {
                            sqlx::query("INSERT INTO dataset_grants VALUES ($1, $2, $3)")
                                .bind(DATASET)
                                .bind(user)
                                .bind(grant)
                                .execute(&mut *conn)
                                .await
                                .unwrap();
                        }
                        let listed: bool = sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
                            "SELECT EXISTS (SELECT 1 FROM datasets WHERE {condition})"
                        )))
                        .bind(caller.user_id())
                        .bind(caller.is_admin())
                        .fetch_one(&mut *conn)
                        .await
                        .unwrap();
                        let decided =
                            dataset_decision(&caller, &facts(visibility, published, grant), DatasetAction::Read)
                                .is_ok();
                        assert_eq!(listed, decided, "{name} {visibility:?} published={published} {grant:?}");
                        checked += 1;
                    }
                }
            }
        }
        assert_eq!(checked, 8 * 24);
    }
}
