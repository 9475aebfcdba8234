//! One store suite, two databases: [`both_backends!`] runs each test on SQLite (a temp data
//! directory) and on PostgreSQL (a fresh database in the cluster `EXECUTOR_TEST_POSTGRES_URL`
//! names; `scripts/postgres.sh start` makes one). Without that variable the PostgreSQL half is
//! skipped with a line on stderr, unless `EXECUTOR_TEST_REQUIRE_POSTGRES=1` (CI) makes it fail.
#![allow(dead_code)] // each test binary uses a part

use std::sync::atomic::{AtomicU32, Ordering};

use executor_store::{Backend, MasterKey, SqlStore};
use sqlx::Connection as _;

pub(crate) const POSTGRES_URL_ENV: &str = "EXECUTOR_TEST_POSTGRES_URL";

/// A database a test owns, reopenable (close, then open again, sees the same rows).
pub(crate) struct TestDb {
    key: MasterKey,
    place: Place,
}

enum Place {
    Sqlite(tempfile::TempDir),
    Postgres(String),
}

impl TestDb {
    pub(crate) fn sqlite() -> TestDb {
        TestDb {
            key: MasterKey::generate(),
            place: Place::Sqlite(tempfile::tempdir().expect("temp dir")),
        }
    }

    /// A new, empty database in the test cluster, or `None` when there is no cluster.
    pub(crate) async fn postgres() -> Option<TestDb> {
        let Ok(admin) = std::env::var(POSTGRES_URL_ENV) else {
            assert!(
                std::env::var("EXECUTOR_TEST_REQUIRE_POSTGRES").as_deref() != Ok("1"),
                "{POSTGRES_URL_ENV} is not set but EXECUTOR_TEST_REQUIRE_POSTGRES=1"
            );
            eprintln!("skipped on PostgreSQL: {POSTGRES_URL_ENV} is not set");
            return None;
        };
        Some(TestDb {
            key: MasterKey::generate(),
            place: Place::Postgres(fresh_database(&admin).await),
        })
    }

    pub(crate) fn backend(&self) -> Backend {
        match self.place {
            Place::Sqlite(_) => Backend::Sqlite,
            Place::Postgres(_) => Backend::Postgres,
        }
    }

    /// The SQLite data directory (panics on PostgreSQL: such a test is SQLite-only).
    pub(crate) fn path(&self) -> &std::path::Path {
        match &self.place {
            Place::Sqlite(dir) => dir.path(),
            Place::Postgres(_) => panic!("a PostgreSQL test database has no directory"),
        }
    }

    pub(crate) fn url(&self) -> Option<&str> {
        match &self.place {
            Place::Sqlite(_) => None,
            Place::Postgres(url) => Some(url),
        }
    }

    pub(crate) async fn open(&self) -> SqlStore {
        self.open_with_key(self.key.clone()).await
    }

    pub(crate) async fn open_with_key(&self, key: MasterKey) -> SqlStore {
        self.try_open_with_key(key).await.expect("open store")
    }

    pub(crate) async fn try_open_with_key(
        &self,
        key: MasterKey,
    ) -> executor_store::Result<SqlStore> {
        match &self.place {
            Place::Sqlite(dir) => SqlStore::open_with_key(dir.path(), key).await,
            Place::Postgres(url) => SqlStore::connect_postgres(url, key).await,
        }
    }
}

impl TestDb {
    /// Runs `sql` on the database directly, beside the store (to stage what only a crash or an
    /// older build leaves behind).
    pub(crate) async fn execute_raw(&self, sql: &'static str) {
        self.try_execute_raw(sql).await.unwrap();
    }

    /// [`Self::execute_raw`], answering the database's refusal instead of panicking on it.
    pub(crate) async fn try_execute_raw(&self, sql: &'static str) -> Result<(), sqlx::Error> {
        match &self.place {
            Place::Sqlite(dir) => {
                let options =
                    sqlx::sqlite::SqliteConnectOptions::new().filename(dir.path().join("data.db"));
                let mut conn = sqlx::SqliteConnection::connect_with(&options)
                    .await
                    .unwrap();
                let done = sqlx::raw_sql(sql).execute(&mut conn).await.map(|_| ());
                conn.close().await.ok();
                done
            }
            Place::Postgres(url) => {
                let mut conn = sqlx::PgConnection::connect(url).await.unwrap();
                let done = sqlx::raw_sql(sql).execute(&mut conn).await.map(|_| ());
                conn.close().await.ok();
                done
            }
        }
    }
}

impl TestDb {
    /// One integer the database answers to `sql`, read beside the store.
    pub(crate) async fn count_raw(&self, sql: &'static str) -> i64 {
        match &self.place {
            Place::Sqlite(dir) => {
                let options =
                    sqlx::sqlite::SqliteConnectOptions::new().filename(dir.path().join("data.db"));
                let mut conn = sqlx::SqliteConnection::connect_with(&options)
                    .await
                    .unwrap();
                let n: i64 = sqlx::query_scalar(sql).fetch_one(&mut conn).await.unwrap();
                conn.close().await.ok();
                n
            }
            Place::Postgres(url) => {
                let mut conn = sqlx::PgConnection::connect(url).await.unwrap();
                let n: i64 = sqlx::query_scalar(sql).fetch_one(&mut conn).await.unwrap();
                conn.close().await.ok();
                n
            }
        }
    }

    /// Builds the schema an older build left: this crate's migrations up to `version` only,
    /// run on the database directly (the store, opened next, runs the rest).
    pub(crate) async fn migrate_raw_to(&self, version: i64) {
        let dir = tempfile::tempdir().expect("temp dir");
        let source = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("migrations")
            .join(match self.backend() {
                Backend::Sqlite => "sqlite",
                Backend::Postgres => "postgres",
            });
        for entry in std::fs::read_dir(&source).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_str().unwrap().to_owned();
            let number: i64 = name.split('_').next().unwrap().parse().unwrap();
            if number <= version {
                std::fs::copy(&path, dir.path().join(&name)).unwrap();
            }
        }
        let migrator = sqlx::migrate::Migrator::new(dir.path()).await.unwrap();
        match &self.place {
            Place::Sqlite(data) => {
                let options = sqlx::sqlite::SqliteConnectOptions::new()
                    .filename(data.path().join("data.db"))
                    .create_if_missing(true);
                let mut conn = sqlx::SqliteConnection::connect_with(&options)
                    .await
                    .unwrap();
                migrator.run(&mut conn).await.unwrap();
                conn.close().await.ok();
            }
            Place::Postgres(url) => {
                let mut conn = sqlx::PgConnection::connect(url).await.unwrap();
                migrator.run(&mut conn).await.unwrap();
                conn.close().await.ok();
            }
        }
    }
}

/// Creates a uniquely named database and answers its URL.
pub(crate) async fn fresh_database(admin: &str) -> String {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let name = format!(
        "executor_test_{}_{}_{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .subsec_nanos()
    );
    let mut conn = sqlx::PgConnection::connect(admin)
        .await
        .expect("connect to the test cluster");
    sqlx::raw_sql(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
        .execute(&mut conn)
        .await
        .expect("create a test database");
    conn.close().await.ok();
    let (base, _) = admin
        .rsplit_once('/')
        .expect("a database URL ends in /<name>");
    format!("{base}/{name}")
}

/// Runs each `async fn name(db: &TestDb) { … }` twice: `sqlite::name` and `postgres::name`.
#[macro_export]
macro_rules! both_backends {
    ($( $(#[$meta:meta])* async fn $name:ident($db:ident: &TestDb) $body:block )*) => {
        mod sqlite {
            #[allow(unused_imports)]
            use super::*;
            $(
                $(#[$meta])*
                #[tokio::test]
                async fn $name() {
                    let db = $crate::support::TestDb::sqlite();
                    let $db = &db;
                    $body
                }
            )*
        }
        mod postgres {
            #[allow(unused_imports)]
            use super::*;
            $(
                $(#[$meta])*
                #[tokio::test]
                async fn $name() {
                    let Some(db) = $crate::support::TestDb::postgres().await else { return };
                    let $db = &db;
                    $body
                }
            )*
        }
    };
}
