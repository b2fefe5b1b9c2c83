//! The flags every serving command shares (`serve`, `mcp`): what to serve
//! and each service's policy, and the metrics endpoint.

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use crate::host::HostOptions;
use crate::rate::Rate;

/// What to serve and each service's policy: [`HostOptions`].
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct HostArgs {
    /// Serve only this service id (repeatable; the variable takes a
    /// comma-separated list).
    #[arg(
        help_heading = super::headings::SERVICES,
        long,
        env = "TOOL_SERVICE_ONLY",
        value_delimiter = ',',
        value_name = "SERVICE_ID"
    )]
    only: Vec<String>,
    /// Calls each service handles at once, over every transport; more
    /// wait (over Pulsar in the read-ahead, over MCP in arrival order).
    /// `SERVICE_ID=N` sets one service's, over its attribute. Repeatable
    /// (the variable takes a comma-separated list) [default: the service's
    /// `concurrency`, else 64].
    #[arg(help_heading = super::headings::SERVICES, long, env = "TOOL_SERVICE_CONCURRENCY", value_delimiter = ',', value_name = "[SERVICE_ID=]N", value_parser = parse_concurrency)]
    concurrency: Vec<(Option<String>, usize)>,
    /// How long one request may run before it is cancelled and answered
    /// with a `timeout` error, for services whose `timeout` attribute sets
    /// none [default: 600s]. `SERVICE_ID=DURATION` sets one service's
    /// timeout, over its attribute. Repeatable (the variable takes a
    /// comma-separated list); units ms, s, m, h.
    #[arg(help_heading = super::headings::SERVICES, long, env = "TOOL_SERVICE_TIMEOUT", value_delimiter = ',', value_name = "[SERVICE_ID=]DURATION", value_parser = super::parse_timeout)]
    timeout: Vec<(Option<String>, Duration)>,
    /// The most calls a service takes on this replica, over every
    /// transport, e.g. `100/s`, `30/m`, `1000/h` (bursts of up to the count
    /// at once); more are answered `rate-limited` at once, with when to try
    /// again. Alone: every service whose `rate` attribute sets none.
    /// `SERVICE_ID=RATE` sets one service's, over its attribute, and
    /// `SERVICE_ID=off` lifts it. Repeatable (the variable takes a
    /// comma-separated list) [default: the service's `rate`, else none].
    #[arg(help_heading = super::headings::SERVICES, long, env = "TOOL_SERVICE_RATE", value_delimiter = ',', value_name = "[SERVICE_ID=]RATE", value_parser = parse_rate)]
    rate: Vec<(Option<String>, Option<Rate>)>,
    /// The request data this replica holds in memory at once, queued and
    /// running, over every service and transport: e.g. `256MiB`, `1GiB`,
    /// `500MB` or bytes. Over it, a persistent topic is not read until
    /// answers free some, and a non-persistent topic's requests and MCP
    /// calls are answered `overloaded`; a larger request still runs, alone.
    #[arg(help_heading = super::headings::SERVICES, long, env = "TOOL_SERVICE_MEMORY_BUDGET", value_name = "SIZE", default_value = "64MiB", value_parser = super::parse_size)]
    memory_budget: usize,
    /// Seconds requests in flight may take to finish after SIGINT/SIGTERM.
    #[arg(
        help_heading = super::headings::SERVICES,
        long,
        env = "TOOL_SERVICE_GRACE_PERIOD",
        default_value_t = 30,
        value_name = "SECONDS"
    )]
    grace_period: u64,
}

impl HostArgs {
    /// The options these flags say.
    pub(crate) fn options(&self) -> HostOptions {
        let mut options = HostOptions {
            only: self.only.clone(),
            rates: self.rate.clone(),
            grace_period: Duration::from_secs(self.grace_period),
            memory_budget: self.memory_budget,
            ..HostOptions::default()
        };
        for (service, limit) in &self.concurrency {
            match service {
                Some(id) => options.service_concurrency.push((id.clone(), *limit)),
                None => options.concurrency = Some(*limit),
            }
        }
        for (service, limit) in &self.timeout {
            match service {
                Some(id) => options.service_timeouts.push((id.clone(), *limit)),
                None => options.timeout = *limit,
            }
        }
        options
    }
}

/// `[SERVICE_ID=]N`, N at least one.
fn parse_concurrency(text: &str) -> Result<(Option<String>, usize), String> {
    let (id, count) = match text.rsplit_once('=') {
        Some((id, count)) if !id.is_empty() => (Some(id.to_owned()), count),
        _ => (None, text),
    };
    match count.trim().parse::<usize>() {
        Ok(count) if count >= 1 => Ok((id, count)),
        _ => Err(format!(
            "`{count}` is not a number of calls at once: write a whole number of at least 1, \
             alone or as SERVICE_ID=N"
        )),
    }
}

/// `[SERVICE_ID=]RATE`, where RATE may be `off` for one service.
fn parse_rate(text: &str) -> Result<(Option<String>, Option<Rate>), String> {
    let read = |rate: &str| {
        rate.parse::<Rate>()
            .map_err(|error| format!("the rate `{rate}` {}", error.problem()))
    };
    match text.rsplit_once('=') {
        Some((id, "off")) if !id.is_empty() => Ok((Some(id.to_owned()), None)),
        Some((id, rate)) if !id.is_empty() => Ok((Some(id.to_owned()), Some(read(rate)?))),
        _ if text == "off" => Err(
            "`off` lifts one service's limit: write SERVICE_ID=off (without a --rate for every service, none is set)"
                .to_owned(),
        ),
        _ => Ok((None, Some(read(text)?))),
    }
}

/// Where the metrics and probes are served.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct MetricsArgs {
    /// Serve Prometheus metrics and the probes (/livez, /readyz) on this
    /// port [default: 8000].
    #[arg(
        help_heading = super::headings::METRICS,
        short = 'P',
        long,
        env = "TOOL_SERVICE_METRICS_PORT",
        value_name = "PORT"
    )]
    metrics_port: Option<u16>,
    /// The address to serve metrics on [default: every interface, what
    /// TrustGraph's processors do and what a scraper in another container
    /// needs; for `mcp --listen` on a loopback address, that address].
    #[arg(help_heading = super::headings::METRICS, long, env = "TOOL_SERVICE_METRICS_ADDRESS", value_name = "ADDRESS")]
    metrics_address: Option<IpAddr>,
    /// Serve Prometheus metrics (the default, but for `mcp` on stdio; see
    /// --no-metrics).
    #[arg(help_heading = super::headings::METRICS, long, overrides_with = "no_metrics")]
    metrics: bool,
    /// Do not serve Prometheus metrics.
    #[arg(help_heading = super::headings::METRICS, long, env = "TOOL_SERVICE_NO_METRICS", value_parser = clap::builder::BoolishValueParser::new(), overrides_with = "metrics")]
    no_metrics: bool,
}

impl MetricsArgs {
    /// Where to serve metrics: on by default when `by_default` (a server
    /// process), else only when a flag or variable asks for them (`mcp` on
    /// stdio, which a desktop client may start many times over).
    /// Unless --metrics-address says otherwise, they are served on every
    /// interface, or on `near` when it is a loopback address (a server for
    /// this machine only).
    pub(crate) fn address(&self, by_default: bool, near: Option<IpAddr>) -> Option<SocketAddr> {
        let asked = self.metrics || self.metrics_port.is_some();
        if self.no_metrics || !(by_default || asked) {
            return None;
        }
        let port = self
            .metrics_port
            .unwrap_or(crate::metrics::DEFAULT_METRICS_PORT);
        let address = self.metrics_address.unwrap_or_else(|| match near {
            Some(near) if near.is_loopback() => near,
            _ => IpAddr::from([0, 0, 0, 0]),
        });
        Some(SocketAddr::from((address, port)))
    }

    /// `address`, unless it is the default port and another process holds
    /// it (a second binary on one machine, say): then a free port, with a
    /// WARN that says so; the `metrics on …` line names the port taken. A
    /// port asked for with --metrics-port is kept, and its bind fails as
    /// it would.
    pub(crate) fn unless_taken(&self, address: Option<SocketAddr>) -> Option<SocketAddr> {
        let address = address?;
        if self.metrics_port.is_some() {
            return Some(address);
        }
        match std::net::TcpListener::bind(address) {
            Err(error) if error.kind() == std::io::ErrorKind::AddrInUse => {
                tracing::warn!(
                    "the metrics port {} is in use (another process?): serving metrics on a free \
                     port instead; set --metrics-port to choose one",
                    address.port()
                );
                Some(SocketAddr::new(address.ip(), 0))
            }
            _ => Some(address),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_default_metrics_port_in_use_gives_way_to_a_free_one_and_an_asked_one_does_not() {
        use clap::Parser;
        #[derive(clap::Parser)]
        struct Flags {
            #[command(flatten)]
            metrics: MetricsArgs,
        }
        let flags = |args: &[&str]| {
            Flags::try_parse_from(std::iter::once("bin").chain(args.iter().copied()))
                .unwrap()
                .metrics
        };
        // Held here (or by another process already): taken either way.
        let _held =
            std::net::TcpListener::bind(("127.0.0.1", crate::metrics::DEFAULT_METRICS_PORT));
        let default = flags(&["--metrics-address", "127.0.0.1"]);
        let address = default.address(true, None);
        assert_eq!(
            address.map(|a| a.port()),
            Some(crate::metrics::DEFAULT_METRICS_PORT)
        );
        assert_eq!(
            default.unless_taken(address),
            Some(SocketAddr::from(([127, 0, 0, 1], 0)))
        );
        let asked = flags(&["--metrics-address", "127.0.0.1", "-P", "8000"]);
        assert_eq!(
            asked.unless_taken(asked.address(true, None)),
            asked.address(true, None)
        );
        // A free default port is kept.
        let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = free.local_addr().unwrap().port();
        drop(free);
        let at = Some(SocketAddr::from(([127, 0, 0, 1], port)));
        assert_eq!(default.unless_taken(at), at);
    }

    #[test]
    fn concurrency_names_a_service_or_every_one() {
        assert_eq!(parse_concurrency("8"), Ok((None, 8)));
        assert_eq!(
            parse_concurrency("joke-service=2"),
            Ok((Some("joke-service".into()), 2))
        );
        for bad in ["0", "joke-service=0", "many", "joke-service="] {
            let refused = parse_concurrency(bad).unwrap_err();
            assert!(refused.contains("whole number of at least 1"), "{refused}");
        }
    }

    #[test]
    fn rates_name_a_service_or_every_one() {
        assert_eq!(parse_rate("100/s"), Ok((None, Some(Rate::per_second(100)))));
        assert_eq!(
            parse_rate("joke-service=30/m"),
            Ok((Some("joke-service".into()), Some(Rate::per_minute(30))))
        );
        assert_eq!(
            parse_rate("joke-service=off"),
            Ok((Some("joke-service".into()), None))
        );
        assert_eq!(
            parse_rate("0/s").unwrap_err(),
            "the rate `0/s` must allow at least one call, e.g. `100/s`"
        );
        assert_eq!(
            parse_rate("joke-service=fast").unwrap_err(),
            "the rate `fast` must be a whole number of calls per `s`, `m` or `h`, e.g. `100/s`"
        );
        assert!(parse_rate("off").unwrap_err().contains("SERVICE_ID=off"));
    }
}
