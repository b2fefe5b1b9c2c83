//! The suites that need no broker and register no services of their own,
//! in one test binary (one link of the runtime instead of five):
//!
//! * `architecture`: the runtime's module layers, read with `syn`;
//! * `docs`: every flag, command, cargo feature and metric family documented;
//! * `features`: what each cargo feature adds to the dependency tree;
//! * `fuzz_seeds`: the fuzz targets' invariants on the committed seeds;
//! * `golden`: the wire vectors of the contract;
//! * `links`: every link of the Markdown files works as a file, and the
//!   guides' links to files and docs.rs name items in rustdoc;
//! * `ops`: the metrics and probes of `mcp` (HTTP and stdio) and of `serve
//!   --mcp-listen` while its broker does not answer;
//! * `registries`: every example binary's registry is valid;
//! * `suites`: every broker test takes its suite's turn;
//! * `version`: `-V` and `--version` of the examples.

#[path = "../support/mod.rs"]
mod support;

mod architecture;
mod docs;
mod features;
mod fuzz_seeds;
mod golden;
mod links;
mod ops;
mod registries;
mod suites;
mod version;
