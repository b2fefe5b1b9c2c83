//! Services that own resources, as users run them: the `custom_rag` example
//! opens its SQLite database once in its setup hook, shares it with every
//! request as `#[state]`, and closes it after the drain. On a real broker.

use crate::support;

use std::time::Duration;

use serde_json::{json, Value};
use support::Replica;

/// The tests that serve `custom-rag` take turns: they share its topics.
static CUSTOM_RAG: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

fn temp_db(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("tool-service-state-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    let _ = std::fs::remove_file(&path);
    path
}

/// Adds a passage to the database at `path`, as another program would: only
/// it mentions turbines.
fn add_turbines(path: &std::path::Path) {
    rusqlite::Connection::open(path)
        .unwrap()
        .execute(
            "INSERT INTO passages(collection, source, text) VALUES ('customers', 'crm/umbrella', 'Umbrella ordered turbines.')",
            [],
        )
        .unwrap();
}

fn sources(text: &str) -> Vec<String> {
    let hits: Vec<Value> = serde_json::from_str(text).unwrap();
    hits.iter()
        .map(|hit| hit["source"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn a_failed_setup_exits_naming_the_flag_and_subscribes_nothing() {
    let _suite = support::suite(module_path!());
    let url = support::require_broker();
    let replica = Replica::spawn_with_env(
        &url,
        "custom_rag",
        &[],
        &[("CUSTOM_RAG_DB", "/nonexistent/dir/rag.db")],
    );
    let (status, lines) = replica.wait_exit();
    let log = lines.join("\n");
    assert_eq!(status.code(), Some(1), "{log}");
    assert!(
        log.contains(
            "error: start-up failed: --db /nonexistent/dir/rag.db: cannot open the database"
        ),
        "{log}"
    );
    // The hook runs before anything connects or subscribes.
    for never in ["connected to Pulsar", "serving", "ready"] {
        assert!(!log.contains(never), "{never:?} in:\n{log}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_database_serves_200_concurrent_calls_and_sees_new_rows() {
    let _suite = support::suite(module_path!());
    let _turn = CUSTOM_RAG.lock().await;
    let metrics_port = support::free_port();
    let db = temp_db("concurrent.db");
    let db_text = db.to_str().unwrap().to_owned();
    let replica = Replica::spawn_with_env(
        &support::require_broker(),
        "custom_rag",
        &[
            "--concurrency",
            "64",
            "--db",
            &db_text,
            "--metrics-port",
            &metrics_port.to_string(),
        ],
        &[],
    );
    replica.wait_for_log(" ready", Duration::from_secs(60));
    // The application's own gauge, after tool-service's families.
    let passages = |collection: &str| {
        let (_, text) = support::scrape(metrics_port);
        assert!(text.contains("# TYPE tg_consumer_state gauge"), "{text}");
        let prefix = format!("custom_rag_passages{{collection=\"{collection}\"}} ");
        text.lines()
            .find_map(|line| line.strip_prefix(&prefix))
            .unwrap_or_else(|| panic!("no {prefix} in:\n{text}"))
            .parse::<u64>()
            .unwrap()
    };
    assert_eq!(passages("customers"), 3);
    assert!(db.exists(), "the setup hook did not create the database");
    let client = support::client("non-persistent", "custom-rag").await;
    let calls = (0..200).map(|n| {
        let client = &client;
        async move {
            let (collection, question, expected) = if n % 2 == 0 {
                ("customers", "who ordered gears?", "crm/acme")
            } else {
                ("products", "which springs?", "catalog/spring")
            };
            let text = client
                .call(
                    &json!({"collection": collection}),
                    &json!({"question": question}),
                )
                .await
                .unwrap();
            assert_eq!(sources(&text)[0], expected, "{text}");
        }
    });
    futures_util::future::join_all(calls).await;

    // Another program adds a passage; the next query finds it.
    add_turbines(&db);
    assert_eq!(passages("customers"), 4);
    let text = client
        .call(
            &json!({"collection": "customers"}),
            &json!({"question": "who ordered turbines?"}),
        )
        .await
        .unwrap();
    assert_eq!(sources(&text)[0], "crm/umbrella", "{text}");
    let (status, _) = replica.finish();
    assert!(status.success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_shutdown_hook_runs_after_the_drain() {
    let _suite = support::suite(module_path!());
    let _turn = CUSTOM_RAG.lock().await;
    let db = temp_db("drain.db");
    let db_text = db.to_str().unwrap().to_owned();
    let replica = Replica::spawn_with_env(
        &support::require_broker(),
        "custom_rag",
        &[],
        &[("CUSTOM_RAG_DB", &db_text)],
    );
    replica.wait_for_log(" ready", Duration::from_secs(60));
    let client = support::client("non-persistent", "custom-rag").await;
    let text = client
        .call(
            &json!({"collection": "products"}),
            &json!({"question": "which gears?"}),
        )
        .await
        .unwrap();
    assert_eq!(sources(&text)[0], "catalog/gear");
    let (status, lines) = replica.finish();
    assert!(status.success(), "{lines:#?}");
    let stopped = lines
        .iter()
        .position(|line| line.contains("stopped") && line.contains("custom-rag"))
        .unwrap_or_else(|| panic!("no `stopped` line: {lines:#?}"));
    let closed = lines
        .iter()
        .position(|line| line.contains("closed the passages database"))
        .unwrap_or_else(|| panic!("the shutdown hook did not run: {lines:#?}"));
    assert!(stopped < closed, "closed before the drain: {lines:#?}");
}

/// `custom_rag`'s own `--db`: in the `--help` of the commands that run
/// handlers only, and what `call` opens.
#[test]
fn the_binarys_own_flag_is_in_the_help_and_reaches_the_setup_hook() {
    let _suite = support::suite(module_path!());
    let run = |args: &[&str], env: &[(&str, &str)]| {
        let output = std::process::Command::new(support::example("custom_rag"))
            .args(args)
            .env_remove("CUSTOM_RAG_DB")
            .envs(env.iter().copied())
            .output()
            .unwrap();
        let text = String::from_utf8(output.stdout).unwrap();
        let err = String::from_utf8(output.stderr).unwrap();
        (output.status, text, err)
    };
    for command in ["serve", "call", "mcp"] {
        let (status, help, err) = run(&[command, "--help"], &[]);
        assert!(status.success(), "{err}");
        assert!(
            help.contains("custom_rag options:")
                && help.contains("--db <PATH>")
                && help.contains("[env: CUSTOM_RAG_DB=]"),
            "`{command} --help`:\n{help}"
        );
    }
    for command in ["descriptors", "list", "announce"] {
        let (_, help, _) = run(&[command, "--help"], &[]);
        assert!(!help.contains("--db"), "`{command} --help`:\n{help}");
    }
    let (status, _, err) = run(&["list", "--db", "x.db"], &[]);
    assert!(
        !status.success() && err.contains("unexpected argument '--db'"),
        "{err}"
    );

    // `call --db` creates and seeds the database; a passage added to it
    // then is found by flag and by variable.
    let db = temp_db("call.db");
    let db_text = db.to_str().unwrap();
    let question = r#"{"question": "who ordered turbines?"}"#;
    let (status, _, err) = run(
        &[
            "call",
            "query-customers",
            "--db",
            db_text,
            "--args",
            question,
        ],
        &[],
    );
    assert!(status.success() && db.exists(), "{err}");
    add_turbines(&db);
    for (flags, env) in [
        (vec!["--db", db_text], vec![]),
        (vec![], vec![("CUSTOM_RAG_DB", db_text)]),
    ] {
        let mut call = vec!["call", "query-customers", "--args", question];
        call.extend(flags);
        let (status, out, err) = run(&call, &env);
        assert!(status.success(), "{err}");
        let frame: Value = serde_json::from_str(out.trim()).unwrap();
        let response = frame["response"].as_str().unwrap();
        assert_eq!(sources(response)[0], "crm/umbrella", "{out}");
    }
    // Without it, the in-memory samples: no turbines there.
    let (status, out, err) = run(&["call", "query-customers", "--args", question], &[]);
    assert!(status.success(), "{err}");
    assert!(!out.contains("crm/umbrella"), "{out}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_service_from_a_library_crate_is_listed_and_served() {
    let _suite = support::suite(module_path!());
    let list = std::process::Command::new(support::example("two_crates"))
        .arg("list")
        .output()
        .unwrap();
    let text = String::from_utf8(list.stdout).unwrap();
    assert!(text.contains("library-reverse-service\n"), "{text}");
    assert!(text.contains("two-crates-hello-service\n"), "{text}");
    let replica = Replica::start("two_crates", &["--only", "library-reverse-service"]);
    let client = support::client("non-persistent", "library-reverse").await;
    let text = client
        .call(&json!({}), &json!({"text": "stressed"}))
        .await
        .unwrap();
    assert_eq!(text, "desserts");
    let (status, _) = replica.finish();
    assert!(status.success());
}
