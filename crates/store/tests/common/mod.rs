//! What every suite of the store's tests shares: a database per test on either backend, and
//! raw access to its tables.
#![allow(clippy::unwrap_used, dead_code, unreachable_pub)]

/// A database for one test: its URL and what keeps it alive.
pub struct Db {
    pub url: String,
    _dir: Option<tempfile::TempDir>,
}

pub fn sqlite_db() -> Db {
    let dir = tempfile::tempdir().unwrap();
    // A directory that does not exist yet: opening creates it.
    let url = format!("sqlite://{}/data/agentwire.db", dir.path().display());
    Db {
        url,
        _dir: Some(dir),
    }
}

pub async fn postgres_db() -> Db {
    Db {
        url: agentwire_testkit::postgres::required_schema_url().await,
        _dir: None,
    }
}

/// Runs each named test on both backends.
macro_rules! on_both_backends {
    ($($name:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::$name(super::sqlite_db()).await;
                }
            )*
        }
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::$name(super::postgres_db().await).await;
                }
            )*
        }
    };
}

/// The first column of the first row of `sql` as an integer, read from the test's database
/// directly rather than through the store.
pub async fn scalar(db: &Db, sql: &str) -> i64 {
    let sql = sqlx::AssertSqlSafe(sql.to_owned());
    if db.url.starts_with("sqlite:") {
        let pool = sqlx::SqlitePool::connect(&db.url).await.unwrap();
        let value = sqlx::query_scalar(sql).fetch_one(&pool).await.unwrap();
        pool.close().await;
        value
    } else {
        let pool = sqlx::PgPool::connect(&db.url).await.unwrap();
        let value = sqlx::query_scalar(sql).fetch_one(&pool).await.unwrap();
        pool.close().await;
        value
    }
}

/// Runs `sql` on the test's database directly.
pub async fn execute(db: &Db, sql: &str) {
    let sql = sqlx::AssertSqlSafe(sql.to_owned());
    if db.url.starts_with("sqlite:") {
        let pool = sqlx::SqlitePool::connect(&db.url).await.unwrap();
        sqlx::query(sql).execute(&pool).await.unwrap();
        pool.close().await;
    } else {
        let pool = sqlx::PgPool::connect(&db.url).await.unwrap();
        sqlx::query(sql).execute(&pool).await.unwrap();
        pool.close().await;
    }
}
