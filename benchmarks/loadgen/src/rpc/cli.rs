//! The command line of switchboard-rpcload (README.md). The capacity script
//! (`benchmarks/rpc/capacity.mjs`) is written against it.

use crate::wire::{Call, Protocol};

pub const USAGE: &str = "\
usage: switchboard-rpcload --port <P> --protocol switchboard|qrpc|http
    --scenario tiny-response|fast-reply|serial-rtt
    [--host 127.0.0.1]
    [--connections C] [--in-flight K]   calls outstanding per connection (default 10 × 10; serial-rtt: 1 × 1, fixed)
    [--payload BYTES]                   tiny-response / serial-rtt request size, echoed back (default 16)
    [--warmup SECS] [--duration SECS]   defaults 2 and 5; fractions allowed
    [--server-pid PID]                  read the server's CPU and memory from /proc/PID";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scenario {
    TinyResponse,
    FastReply,
    SerialRtt,
}

impl Scenario {
    pub fn name(self) -> &'static str {
        match self {
            Scenario::TinyResponse => "tiny-response",
            Scenario::FastReply => "fast-reply",
            Scenario::SerialRtt => "serial-rtt",
        }
    }

    pub fn call(self) -> Call {
        match self {
            Scenario::FastReply => Call::Fast,
            Scenario::TinyResponse | Scenario::SerialRtt => Call::Echo,
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    pub port: u16,
    pub host: String,
    pub protocol: Protocol,
    pub scenario: Scenario,
    pub connections: usize,
    pub in_flight: u32,
    pub payload: usize,
    pub warmup_s: f64,
    pub duration_s: f64,
    pub server_pid: Option<u32>,
}

#[derive(Debug, PartialEq)]
pub enum CliError {
    Help,
    Bad(String),
}

fn bad<T>(msg: impl Into<String>) -> Result<T, CliError> {
    Err(CliError::Bad(msg.into()))
}

fn value<T: std::str::FromStr>(flag: &str, v: &str) -> Result<T, CliError> {
    v.parse()
        .map_err(|_| CliError::Bad(format!("{flag}: invalid value {v:?}")))
}

fn seconds(flag: &str, v: &str) -> Result<f64, CliError> {
    let s: f64 = value(flag, v)?;
    if !(s.is_finite() && s >= 0.0) {
        return bad(format!("{flag}: not a number of seconds: {v:?}"));
    }
    Ok(s)
}

pub fn parse(args: impl IntoIterator<Item = String>) -> Result<Config, CliError> {
    let mut args = args.into_iter();
    let (mut port, mut protocol, mut scenario) = (None, None, None);
    let (mut connections, mut in_flight) = (None, None);
    let mut cfg = Config {
        port: 0,
        host: "127.0.0.1".into(),
        protocol: Protocol::Switchboard,
        scenario: Scenario::TinyResponse,
        connections: 10,
        in_flight: 10,
        payload: 16,
        warmup_s: 2.0,
        duration_s: 5.0,
        server_pid: None,
    };
    while let Some(arg) = args.next() {
        if arg == "--help" || arg == "-h" {
            return Err(CliError::Help);
        }
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f.to_string(), Some(v.to_string())),
            _ => (arg.clone(), None),
        };
        let mut v = || match inline.clone().or_else(|| args.next()) {
            Some(v) => Ok(v),
            None => bad(format!("{flag} needs a value")),
        };
        match flag.as_str() {
            "--port" => port = Some(value::<u16>(&flag, &v()?)?),
            "--host" => cfg.host = v()?,
            "--protocol" => {
                let name = v()?;
                protocol = Some(
                    Protocol::ALL
                        .into_iter()
                        .find(|p| p.name() == name)
                        .ok_or_else(|| {
                            CliError::Bad(format!("--protocol: unknown protocol {name:?}"))
                        })?,
                );
            }
            "--scenario" => {
                scenario = Some(match v()?.as_str() {
                    "tiny-response" => Scenario::TinyResponse,
                    "fast-reply" => Scenario::FastReply,
                    "serial-rtt" => Scenario::SerialRtt,
                    other => return bad(format!("--scenario: unknown scenario {other:?}")),
                })
            }
            "--connections" => connections = Some(value::<usize>(&flag, &v()?)?),
            "--in-flight" => in_flight = Some(value::<u32>(&flag, &v()?)?),
            "--payload" => cfg.payload = value(&flag, &v()?)?,
            "--warmup" => cfg.warmup_s = seconds(&flag, &v()?)?,
            "--duration" => cfg.duration_s = seconds(&flag, &v()?)?,
            "--server-pid" => cfg.server_pid = Some(value(&flag, &v()?)?),
            _ => return bad(format!("unknown argument {arg:?}")),
        }
    }
    cfg.port = port.ok_or_else(|| CliError::Bad("--port is required".into()))?;
    cfg.protocol = protocol.ok_or_else(|| CliError::Bad("--protocol is required".into()))?;
    cfg.scenario = scenario.ok_or_else(|| CliError::Bad("--scenario is required".into()))?;
    if cfg.scenario == Scenario::SerialRtt {
        if connections.unwrap_or(1) != 1 || in_flight.unwrap_or(1) != 1 {
            return bad("serial-rtt is one connection with one call at a time: --connections 1 --in-flight 1");
        }
        (connections, in_flight) = (Some(1), Some(1));
    }
    cfg.connections = connections.unwrap_or(cfg.connections);
    cfg.in_flight = in_flight.unwrap_or(cfg.in_flight);
    if cfg.connections == 0 || cfg.in_flight == 0 {
        return bad("--connections and --in-flight must be at least 1");
    }
    if cfg.duration_s <= 0.0 {
        return bad("--duration must be above 0");
    }
    Ok(cfg)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn defaults_and_flags() {
        let c = parse(args(
            "--port 9 --protocol qrpc --scenario=fast-reply --in-flight 100 --server-pid 42",
        ))
        .unwrap();
        assert_eq!(c.port, 9);
        assert_eq!(c.protocol, Protocol::Qrpc);
        assert_eq!(c.scenario, Scenario::FastReply);
        assert_eq!((c.connections, c.in_flight, c.payload), (10, 100, 16));
        assert_eq!((c.warmup_s, c.duration_s), (2.0, 5.0));
        assert_eq!(c.server_pid, Some(42));
    }

    #[test]
    fn serial_rtt_is_one_by_one() {
        let c = parse(args("--port 9 --protocol http --scenario serial-rtt")).unwrap();
        assert_eq!((c.connections, c.in_flight), (1, 1));
        assert!(parse(args(
            "--port 9 --protocol http --scenario serial-rtt --connections 2"
        ))
        .is_err());
    }

    #[test]
    fn mistakes() {
        assert_eq!(parse(args("--help")), Err(CliError::Help));
        for bad in [
            "--protocol http --scenario tiny-response",
            "--port 9 --scenario tiny-response",
            "--port 9 --protocol grpc --scenario tiny-response",
            "--port 9 --protocol http --scenario parallel",
            "--port 9 --protocol http --scenario tiny-response --in-flight 0",
            "--port 9 --protocol http --scenario tiny-response --duration -1",
            "--port 9 --protocol http --scenario tiny-response --bogus 1",
            "--port 9 --protocol http --scenario tiny-response --warmup",
        ] {
            assert!(matches!(parse(args(bad)), Err(CliError::Bad(_))), "{bad}");
        }
    }
}
