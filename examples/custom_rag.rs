//! The spec's `custom-rag` service: one service behind two tools, each with
//! its own `collection`, answering from a SQLite database with full-text
//! search (FTS5).
//!
//! The database is opened once, at start-up, and shared by every request as
//! `#[state]`. The handler is a plain `fn`: SQLite blocks, so the
//! attribute runs it on Tokio's blocking pool, off the handler threads,
//! under the same timeout, concurrency and drain, and `?` takes any error
//! (`Box<dyn Error + Send + Sync>`). The binary's own flag `--db PATH` (env `CUSTOM_RAG_DB`), which
//! `serve`, `call` and `mcp` list in their `--help`, names the file:
//! created with the sample passages when it does not exist; rows another
//! program inserts into `passages(collection, source, text)` are found by
//! the next query. Without it, an in-memory database holds the samples.
//!
//! ```text
//! cargo run --example custom_rag
//! cargo run --example custom_rag -- call query-customers --db rag.db --args '{"question": "who ordered gears?"}'
//! ```

use std::error::Error;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use rusqlite::Connection;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tool_service::metrics::AppMetrics;
use tool_service::{tool_service, App, HookError, State, ToolError};

/// What a tool of this service fixes.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub struct RagConfig {
    /// The collection to search.
    pub collection: String,
    /// How many passages to return.
    #[serde(default = "default_limit")]
    pub max_results: usize,
}

fn default_limit() -> usize {
    3
}

/// What the LLM asks.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct QueryArgs {
    /// The question to answer from the collection.
    pub question: String,
}

/// One passage found.
#[derive(Debug, Serialize, PartialEq)]
pub struct Passage {
    /// Where it comes from.
    pub source: String,
    /// The text.
    pub text: String,
}

/// The sample passages a new database starts with: (collection, source,
/// text).
const SAMPLES: [(&str, &str, &str); 6] = [
    (
        "customers",
        "crm/acme",
        "Acme Corp ordered 400 gears in March.",
    ),
    (
        "customers",
        "crm/globex",
        "Globex asked for a quote on springs.",
    ),
    (
        "customers",
        "crm/initech",
        "Initech renewed its support contract.",
    ),
    (
        "products",
        "catalog/gear",
        "Gears come in brass and steel, 10 to 200 teeth.",
    ),
    (
        "products",
        "catalog/spring",
        "Springs are rated from 5 N to 500 N.",
    ),
    ("products", "catalog/bolt", "Bolts ship in boxes of 100."),
];

/// The passages database: one connection, shared by every request.
#[derive(Debug)]
pub struct Passages {
    connection: Mutex<Connection>,
}

/// The schema: passages, their full-text index, and the triggers that keep
/// the index up to date whoever writes the table.
const SCHEMA: &str = "
    PRAGMA journal_mode = WAL;
    CREATE TABLE IF NOT EXISTS passages(collection TEXT NOT NULL, source TEXT NOT NULL, text TEXT NOT NULL);
    CREATE VIRTUAL TABLE IF NOT EXISTS passages_fts USING fts5(
        text, content = 'passages', content_rowid = 'rowid', tokenize = 'porter unicode61');
    CREATE TRIGGER IF NOT EXISTS passages_added AFTER INSERT ON passages BEGIN
        INSERT INTO passages_fts(rowid, text) VALUES (new.rowid, new.text);
    END;
    CREATE TRIGGER IF NOT EXISTS passages_removed AFTER DELETE ON passages BEGIN
        INSERT INTO passages_fts(passages_fts, rowid, text) VALUES ('delete', old.rowid, old.text);
    END;
    CREATE TRIGGER IF NOT EXISTS passages_changed AFTER UPDATE ON passages BEGIN
        INSERT INTO passages_fts(passages_fts, rowid, text) VALUES ('delete', old.rowid, old.text);
        INSERT INTO passages_fts(rowid, text) VALUES (new.rowid, new.text);
    END;
";

/// The binary's own flags, beside tool-service's.
#[derive(Debug, clap::Args)]
pub struct Settings {
    /// The SQLite database of passages, created and seeded when it does not
    /// exist [default: an in-memory one].
    #[arg(long, env = "CUSTOM_RAG_DB", value_name = "PATH")]
    pub db: Option<PathBuf>,
}

impl Passages {
    /// Opens the database `--db` names (in memory without one), creating
    /// and seeding it when it does not exist, on the blocking pool.
    pub async fn open_at(path: Option<PathBuf>) -> Result<Self, HookError> {
        let opened = tokio::task::spawn_blocking(move || Self::open(path.as_deref())).await?;
        opened
    }

    /// Opens (or creates and seeds) the database at `path`, or an in-memory
    /// one.
    pub fn open(path: Option<&Path>) -> Result<Self, HookError> {
        let (connection, new) = match path {
            Some(path) => {
                let new = !path.exists();
                let connection = Connection::open(path).map_err(|error| {
                    format!("--db {}: cannot open the database: {error}", path.display())
                })?;
                (connection, new)
            }
            None => (Connection::open_in_memory()?, true),
        };
        connection
            .execute_batch(SCHEMA)
            .map_err(|error| format!("--db: cannot set up the passages table: {error}"))?;
        if new {
            let mut insert = connection
                .prepare("INSERT INTO passages(collection, source, text) VALUES (?1, ?2, ?3)")?;
            for (collection, source, text) in SAMPLES {
                insert.execute((collection, source, text))?;
            }
        }
        Ok(Self {
            connection: Mutex::new(connection),
        })
    }

    /// `custom_rag_passages{collection="…"}`: the rows of each collection,
    /// counted when `/metrics` is scraped (an indexed count, quick beside a
    /// search).
    pub fn write_metrics(&self, out: &mut String) {
        use std::fmt::Write as _;
        let connection = self
            .connection
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let counts = connection
            .prepare_cached(
                "SELECT collection, count(*) FROM passages GROUP BY collection ORDER BY collection",
            )
            .and_then(|mut counts| {
                counts
                    .query_map([], |row| {
                        Ok((row.get::<_, String>(0)?, row.get::<_, i64>(1)?))
                    })?
                    .collect::<rusqlite::Result<Vec<_>>>()
            });
        let Ok(counts) = counts else {
            return;
        };
        out.push_str("# HELP custom_rag_passages Passages in the database, by collection\n");
        out.push_str("# TYPE custom_rag_passages gauge\n");
        for (collection, count) in counts {
            let collection = collection.replace('\\', "\\\\").replace('"', "\\\"");
            let _ = writeln!(
                out,
                "custom_rag_passages{{collection=\"{collection}\"}} {count}"
            );
        }
    }

    /// The best `limit` passages of `collection` for `question`, best first.
    pub fn search(
        &self,
        collection: &str,
        question: &str,
        limit: usize,
    ) -> rusqlite::Result<Vec<Passage>> {
        // Each word of four letters or more, as a quoted FTS5 term: any
        // of them may match; bm25 ranks passages matching more first.
        let terms: Vec<String> = question
            .split(|c: char| !c.is_alphanumeric())
            .filter(|word| word.chars().count() > 3)
            .map(|word| format!("\"{word}\""))
            .collect();
        if terms.is_empty() {
            return Ok(Vec::new());
        }
        let connection = self
            .connection
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let mut query = connection.prepare_cached(
            "SELECT p.source, p.text FROM passages_fts JOIN passages p ON p.rowid = passages_fts.rowid
             WHERE passages_fts MATCH ?1 AND p.collection = ?2
             ORDER BY bm25(passages_fts) LIMIT ?3",
        )?;
        let rows = query.query_map(
            (
                terms.join(" OR "),
                collection,
                i64::try_from(limit).unwrap_or(i64::MAX),
            ),
            |row| {
                Ok(Passage {
                    source: row.get(0)?,
                    text: row.get(1)?,
                })
            },
        )?;
        rows.collect()
    }

    /// Whether the collection has any passage.
    pub fn has_collection(&self, collection: &str) -> rusqlite::Result<bool> {
        let connection = self
            .connection
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        connection.query_row(
            "SELECT EXISTS(SELECT 1 FROM passages WHERE collection = ?1)",
            [collection],
            |row| row.get(0),
        )
    }
}

/// Answer questions from a custom knowledge collection.
#[tool_service(
    topic = "custom-rag",
    id = "custom-rag",
    tool(
        name = "query-customers",
        description = "Query the customer knowledge base",
        config(collection = "customers"),
        arguments(question = "The question to ask about customers")
    ),
    tool(
        name = "query-products",
        description = "Query the product knowledge base",
        config(collection = "products", "max-results" = 2),
        arguments(question = "The question to ask about products")
    ),
    annotations(read_only, open_world = false)
)]
pub fn custom_rag(
    #[config] config: &RagConfig,
    #[args] args: QueryArgs,
    #[state] passages: Arc<Passages>,
) -> Result<Vec<Passage>, Box<dyn Error + Send + Sync>> {
    let collection = &config.collection;
    // The query's own span, inside the request's: with the `otel` feature,
    // it is the child of the request's span in the trace.
    let _query = tracing::info_span!(
        "search",
        otel.name = "SELECT passages",
        otel.kind = "client",
        db.system.name = "sqlite",
        db.collection.name = "passages",
    )
    .entered();
    if !passages.has_collection(collection)? {
        // A boxed ToolError keeps its type.
        let missing = format!("no collection named `{collection}`");
        return Err(ToolError::with_type("not-found", missing).into());
    }
    Ok(passages.search(collection, &args.question, config.max_results)?)
}

fn main() -> std::process::ExitCode {
    App::new()
        .meta(tool_service::meta!())
        // `--db` in the --help of `serve`, `call` and `mcp`; only they
        // open the database, and `descriptors` and `list` need none.
        .args::<Settings>()
        .setup(|settings: Settings| async move {
            let state = State::new().with(Passages::open_at(settings.db).await?);
            // Beside tool-service's own on `/metrics`: the rows of each
            // collection.
            let passages = state.get::<Passages>().expect("added above");
            let metrics =
                AppMetrics::new().with(move |out: &mut String| passages.write_metrics(out));
            Ok::<_, HookError>(state.with(metrics))
        })
        .shutdown(|state| async move {
            // After the drain: no request uses the database any more.
            drop(state);
            eprintln!("custom-rag: closed the passages database");
        })
        .run()
}
