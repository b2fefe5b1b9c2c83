//! Shared by the broker tests: find the broker (or fail saying how to start
//! one), run services in-process or as processes, and talk raw Pulsar.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::net::{TcpStream, ToSocketAddrs};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use tool_service::pulsar::{Pulsar, TokioExecutor};
use tool_service::serve::{ServeOptions, Serving};
use tool_service::Registry;

/// The broker URL: `PULSAR_URL`, else the local standalone broker.
pub fn broker_url() -> String {
    std::env::var("PULSAR_URL").unwrap_or_else(|_| String::from("pulsar://127.0.0.1:6650"))
}

/// The broker URL, after checking that something answers there.
pub fn require_broker() -> String {
    let url = broker_url();
    let address = url
        .split_once("://")
        .map(|(_, rest)| rest.trim_end_matches('/').to_owned())
        .unwrap_or_default();
    let reachable = address
        .to_socket_addrs()
        .ok()
        .and_then(|mut addresses| addresses.next())
        .is_some_and(|address| {
            TcpStream::connect_timeout(&address, Duration::from_secs(3)).is_ok()
        });
    assert!(
        reachable,
        "no Pulsar broker answers at {url}. Start the local one with `scripts/pulsar.sh start` \
         (it prints the URL), or point PULSAR_URL at a running broker. `scripts/test.sh` starts \
         and stops the broker by itself."
    );
    url
}

pub async fn connect() -> Pulsar<TokioExecutor> {
    tool_service::broker::BrokerOptions::new(require_broker())
        .connect()
        .await
        .expect("connect to the broker")
}

/// Services of this test binary served in-process; stops when dropped.
pub struct InProcess {
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: Option<
        tokio::task::JoinHandle<
            std::collections::HashMap<&'static str, tool_service::serve::ServiceReport>,
        >,
    >,
}

impl InProcess {
    pub async fn start(only: &[&str]) -> Self {
        Self::start_with(only, |_| {}).await
    }

    pub async fn start_with(only: &[&str], configure: impl FnOnce(&mut ServeOptions)) -> Self {
        let registry = Registry::collect().expect("a valid registry");
        let mut options = ServeOptions::new(require_broker());
        options.only = only.iter().map(|id| (*id).to_owned()).collect();
        configure(&mut options);
        let serving = Serving::start(&registry, &options, std::future::pending())
            .await
            .expect("subscribe the services");
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(serving.run_until(async move {
            let _ = stopped.await;
        }));
        Self {
            stop: Some(stop),
            task: Some(task),
        }
    }

    pub async fn stop(
        mut self,
    ) -> std::collections::HashMap<&'static str, tool_service::serve::ServiceReport> {
        let _ = self.stop.take().unwrap().send(());
        self.task.take().unwrap().await.unwrap()
    }
}

impl Drop for InProcess {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// An example binary, built by `cargo test` next to this test's binary.
pub fn example(name: &str) -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let path = exe
        .parent()
        .and_then(|deps| deps.parent())
        .unwrap()
        .join("examples")
        .join(name);
    assert!(
        path.exists(),
        "{} is missing: run the tests with `cargo test --workspace`, which builds the examples, or `cargo build --examples` first",
        path.display()
    );
    path
}

/// An example binary running `serve`; killed when dropped.
pub struct Replica {
    pub child: Child,
    pub log: mpsc::Receiver<String>,
}

impl Replica {
    /// Starts `example serve ARGS…` on the test broker and waits until it
    /// says it is ready.
    pub fn start(name: &str, args: &[&str]) -> Self {
        Self::start_at(&require_broker(), name, args)
    }

    /// Starts `example serve ARGS…` on the broker at `url` and waits until
    /// it says it is ready.
    pub fn start_at(url: &str, name: &str, args: &[&str]) -> Self {
        let replica = Self::spawn_at(url, name, args);
        replica.wait_for_log(" ready", Duration::from_secs(60));
        replica
    }

    /// Starts `example serve ARGS…` on the broker at `url`, without waiting.
    pub fn spawn_at(url: &str, name: &str, args: &[&str]) -> Self {
        let mut child = Command::new(example(name))
            .arg("serve")
            .args(["--pulsar-host", url])
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start the example");
        let stderr = child.stderr.take().unwrap();
        let (lines, log) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if lines.send(line).is_err() {
                    break;
                }
            }
        });
        Self { child, log }
    }

    /// Waits for a log line containing `needle`; returns the lines seen.
    pub fn wait_for_log(&self, needle: &str, timeout: Duration) -> Vec<String> {
        let deadline = std::time::Instant::now() + timeout;
        let mut seen = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            match self.log.recv_timeout(left) {
                Ok(line) => {
                    let found = line.contains(needle);
                    seen.push(line);
                    if found {
                        return seen;
                    }
                }
                Err(_) => panic!(
                    "no log line with {needle:?} within {timeout:?}; saw:\n{}",
                    seen.join("\n")
                ),
            }
        }
    }

    pub fn is_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    pub fn signal(&self, signal: &str) {
        let status = Command::new("kill")
            .args([&format!("-{signal}"), &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
