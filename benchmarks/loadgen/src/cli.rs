//! The command line of README.md. The runner is written against it: names
//! and defaults here must stay as documented there.

use crate::payload::MIN_PAYLOAD;
use crate::protocols::Protocol;

pub const USAGE: &str = "\
usage: switchboard-loadgen --port <P> --scenario echo|room|channels|idle|fanout
    [--host 127.0.0.1] [--protocol ws|socketio|sockjs|sockjs-xhr-streaming]   (default ws)
    [--connections N] [--payload BYTES]                      (default 100, 32)
    [--in-flight K]                 echo and channels: messages in flight per connection (default 1)
    [--rates R1,R2,...]             room, fanout: steps, each an aggregate send rate (messages/s over all senders)
    [--publishers M]                fanout: M clients on /publish send (paced), the --connections on /room only
                                    receive (default 10)
    [--publish-port P]              fanout: the publishers' server port (default: --port, the same server)
    [--stop-mean-latency-ms MS]     room: stop after the first step whose mean latency is above MS (default 200)
    [--warmup SECS] [--duration SECS]   per step (defaults 1 and 5; fractions allowed)
    [--channel-size 10]             channels: connections per channel
    [--settle SECS]                 idle: wait after the last connection opens before measuring (default 2)
    [--server-pid PID]              read the server's CPU and memory from /proc/PID
    [--source-addrs S]              spread connections over source addresses 127.0.0.2 .. 127.0.0.(S+1) (default 8; 0: no bind)
    [--connect-concurrency C]       handshakes in progress at once (default 256)";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scenario {
    Echo,
    Room,
    Channels,
    Idle,
    /// The room's open loop with senders and receivers apart: publishers on
    /// `/publish` (possibly another server: `--publish-port`) and
    /// subscribers on `/room` that send nothing.
    Fanout,
}

impl Scenario {
    pub fn name(self) -> &'static str {
        match self {
            Scenario::Echo => "echo",
            Scenario::Room => "room",
            Scenario::Channels => "channels",
            Scenario::Idle => "idle",
            Scenario::Fanout => "fanout",
        }
    }

    /// The server endpoint the scenario drives (idle connections sit on `/echo`).
    pub fn endpoint(self) -> &'static str {
        match self {
            Scenario::Echo | Scenario::Idle => "echo",
            Scenario::Room | Scenario::Fanout => "room",
            Scenario::Channels => "channels",
        }
    }
}

/// fanout: the publishers' endpoint.
pub const PUBLISH_ENDPOINT: &str = "publish";

/// How a client reaches the server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transport {
    /// One WebSocket per client, for every framing.
    WebSocket,
    /// SockJS's xhr-streaming transport (`--protocol sockjs-xhr-streaming`):
    /// a streaming HTTP response per client brings the server's frames, and
    /// `xhr_send` requests on a second connection carry the client's
    /// messages (`crate::xhr`).
    XhrStreaming,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    pub port: u16,
    pub host: String,
    pub scenario: Scenario,
    /// The framing of the messages (SockJS's for xhr-streaming).
    pub protocol: Protocol,
    pub transport: Transport,
    pub connections: usize,
    pub payload: usize,
    pub in_flight: u32,
    pub rates: Vec<f64>,
    pub stop_mean_latency_ms: f64,
    pub warmup_s: f64,
    pub duration_s: f64,
    pub channel_size: usize,
    pub settle_s: f64,
    pub server_pid: Option<u32>,
    pub source_addrs: u32,
    pub connect_concurrency: usize,
    /// fanout: clients that send, before the `connections` that receive.
    pub publishers: usize,
    /// fanout: the publishers' port (None: `port`).
    pub publish_port: Option<u16>,
}

impl Config {
    /// The `--protocol` name, as the JSON step reports it.
    pub fn protocol_name(&self) -> &'static str {
        match self.transport {
            Transport::WebSocket => self.protocol.name(),
            Transport::XhrStreaming => "sockjs-xhr-streaming",
        }
    }

    /// Clients in all: the receivers (`connections`) and, in fanout, the
    /// publishers (indexes `0..publishers`, opened first).
    pub fn clients(&self) -> usize {
        self.connections + self.senders_apart()
    }

    /// fanout's publishers; 0 in the other scenarios, whose clients all send.
    pub fn senders_apart(&self) -> usize {
        if self.scenario == Scenario::Fanout {
            self.publishers
        } else {
            0
        }
    }

    /// Sockets each client holds: xhr-streaming clients that send have a
    /// second connection for their xhr_send requests (idle ones send nothing).
    pub fn sockets_per_client(&self) -> usize {
        match (self.transport, self.scenario) {
            (Transport::XhrStreaming, Scenario::Idle) | (Transport::WebSocket, _) => 1,
            (Transport::XhrStreaming, _) => 2,
        }
    }
}

/// Why parsing stopped: a request for help, or a mistake to report.
#[derive(Debug, PartialEq)]
pub enum CliError {
    Help,
    Bad(String),
}

fn value<T: std::str::FromStr>(flag: &str, v: &str) -> Result<T, CliError> {
    v.parse()
        .map_err(|_| CliError::Bad(format!("{flag}: invalid value {v:?}")))
}

fn seconds(flag: &str, v: &str) -> Result<f64, CliError> {
    let s: f64 = value(flag, v)?;
    if !s.is_finite() || s < 0.0 {
        return Err(CliError::Bad(format!(
            "{flag}: must be a number of seconds >= 0"
        )));
    }
    Ok(s)
}

pub fn parse<I: IntoIterator<Item = String>>(args: I) -> Result<Config, CliError> {
    let mut port = None;
    let mut scenario = None;
    let mut cfg = Config {
        port: 0,
        host: "127.0.0.1".to_string(),
        scenario: Scenario::Echo,
        protocol: Protocol::Ws,
        transport: Transport::WebSocket,
        connections: 100,
        payload: 32,
        in_flight: 1,
        rates: Vec::new(),
        stop_mean_latency_ms: 200.0,
        warmup_s: 1.0,
        duration_s: 5.0,
        channel_size: 10,
        settle_s: 2.0,
        server_pid: None,
        source_addrs: 8,
        connect_concurrency: 256,
        publishers: 10,
        publish_port: None,
    };
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        if arg == "-h" || arg == "--help" {
            return Err(CliError::Help);
        }
        // Both `--flag value` and `--flag=value`.
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) => (f.to_string(), Some(v.to_string())),
            None => (arg.clone(), None),
        };
        if !flag.starts_with("--") {
            return Err(CliError::Bad(format!("unexpected argument {arg:?}")));
        }
        let v = match inline.or_else(|| args.next()) {
            Some(v) => v,
            None => return Err(CliError::Bad(format!("{flag} needs a value"))),
        };
        let f = flag.as_str();
        match f {
            "--port" => port = Some(value(f, &v)?),
            "--host" => cfg.host = v,
            "--scenario" => {
                scenario = Some(match v.as_str() {
                    "echo" => Scenario::Echo,
                    "room" => Scenario::Room,
                    "channels" => Scenario::Channels,
                    "idle" => Scenario::Idle,
                    "fanout" => Scenario::Fanout,
                    _ => return Err(CliError::Bad(format!("--scenario: unknown scenario {v:?}"))),
                })
            }
            "--protocol" if v == "sockjs-xhr-streaming" => {
                (cfg.protocol, cfg.transport) = (Protocol::SockJs, Transport::XhrStreaming)
            }
            "--protocol" => {
                cfg.protocol = Protocol::parse(&v)
                    .ok_or_else(|| CliError::Bad(format!("--protocol: unknown protocol {v:?}")))?;
                cfg.transport = Transport::WebSocket;
            }
            "--connections" => cfg.connections = value(f, &v)?,
            "--payload" => cfg.payload = value(f, &v)?,
            "--in-flight" => cfg.in_flight = value(f, &v)?,
            "--rates" => {
                cfg.rates = v
                    .split(',')
                    .map(|r| value::<f64>(f, r.trim()))
                    .collect::<Result<_, _>>()?;
            }
            "--stop-mean-latency-ms" => cfg.stop_mean_latency_ms = value(f, &v)?,
            "--warmup" => cfg.warmup_s = seconds(f, &v)?,
            "--duration" => cfg.duration_s = seconds(f, &v)?,
            "--channel-size" => cfg.channel_size = value(f, &v)?,
            "--settle" => cfg.settle_s = seconds(f, &v)?,
            "--server-pid" => cfg.server_pid = Some(value(f, &v)?),
            "--source-addrs" => cfg.source_addrs = value(f, &v)?,
            "--connect-concurrency" => cfg.connect_concurrency = value(f, &v)?,
            "--publishers" => cfg.publishers = value(f, &v)?,
            "--publish-port" => cfg.publish_port = Some(value(f, &v)?),
            _ => return Err(CliError::Bad(format!("unknown option {flag}"))),
        }
    }
    cfg.port = port.ok_or_else(|| CliError::Bad("--port is required".into()))?;
    cfg.scenario = scenario.ok_or_else(|| CliError::Bad("--scenario is required".into()))?;
    validate(&cfg)?;
    Ok(cfg)
}

fn validate(cfg: &Config) -> Result<(), CliError> {
    let bad = |m: &str| Err(CliError::Bad(m.to_string()));
    if cfg.port == 0 {
        return bad("--port must be a port number (1-65535)");
    }
    if cfg.connections == 0 {
        return bad("--connections must be at least 1");
    }
    if cfg.payload < MIN_PAYLOAD {
        return Err(CliError::Bad(format!(
            "--payload must be at least {MIN_PAYLOAD} bytes"
        )));
    }
    if cfg.payload > 16 << 20 {
        return bad("--payload must be at most 16 MiB");
    }
    if cfg.in_flight == 0 {
        return bad("--in-flight must be at least 1");
    }
    if matches!(cfg.scenario, Scenario::Room | Scenario::Fanout) && cfg.rates.is_empty() {
        return bad("room and fanout need --rates R1,R2,...");
    }
    if cfg.scenario == Scenario::Fanout {
        if cfg.publishers == 0 {
            return bad("--publishers must be at least 1");
        }
        if cfg.publish_port == Some(0) {
            return bad("--publish-port must be a port number (1-65535)");
        }
        if cfg.transport == Transport::XhrStreaming {
            return bad("fanout runs over WebSocket only");
        }
    }
    if cfg.rates.iter().any(|r| !r.is_finite() || *r <= 0.0) {
        return bad("--rates must be positive numbers");
    }
    if !cfg.stop_mean_latency_ms.is_finite() || cfg.stop_mean_latency_ms <= 0.0 {
        return bad("--stop-mean-latency-ms must be positive");
    }
    if cfg.duration_s <= 0.0 {
        return bad("--duration must be above 0");
    }
    if cfg.channel_size == 0 {
        return bad("--channel-size must be at least 1");
    }
    if cfg.source_addrs > 253 {
        return bad("--source-addrs must be at most 253 (127.0.0.2 .. 127.0.0.254)");
    }
    if cfg.connect_concurrency == 0 {
        return bad("--connect-concurrency must be at least 1");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn defaults() {
        let c = parse(args("--port 9000 --scenario echo")).unwrap();
        assert_eq!(
            (c.port, c.scenario, c.protocol),
            (9000, Scenario::Echo, Protocol::Ws)
        );
        assert_eq!((c.connections, c.payload, c.in_flight), (100, 32, 1));
        assert_eq!((c.warmup_s, c.duration_s, c.settle_s), (1.0, 5.0, 2.0));
        assert_eq!(
            (c.channel_size, c.source_addrs, c.connect_concurrency),
            (10, 8, 256)
        );
        assert_eq!(c.stop_mean_latency_ms, 200.0);
        assert_eq!(c.server_pid, None);
    }

    #[test]
    fn every_option() {
        let c = parse(args(
            "--port=1 --scenario room --host 127.0.0.9 --protocol sockjs --connections 1000 --payload 64 \
             --in-flight 4 --rates 1000,2500.5 --stop-mean-latency-ms 50 --warmup 0.5 --duration 2 \
             --channel-size 5 --settle 0 --server-pid 77 --source-addrs 16 --connect-concurrency 64",
        ))
        .unwrap();
        assert_eq!(c.rates, vec![1000.0, 2500.5]);
        assert_eq!(
            (c.protocol, c.connections, c.payload, c.in_flight),
            (Protocol::SockJs, 1000, 64, 4)
        );
        assert_eq!(
            (c.warmup_s, c.duration_s, c.settle_s, c.stop_mean_latency_ms),
            (0.5, 2.0, 0.0, 50.0)
        );
        assert_eq!(
            (
                c.channel_size,
                c.server_pid,
                c.source_addrs,
                c.connect_concurrency
            ),
            (5, Some(77), 16, 64)
        );
        assert_eq!(c.host, "127.0.0.9");
        assert_eq!(
            (c.transport, c.protocol_name()),
            (Transport::WebSocket, "sockjs")
        );
    }

    #[test]
    fn xhr_streaming() {
        let c = parse(args(
            "--port 1 --scenario room --rates 10 --protocol sockjs-xhr-streaming",
        ))
        .unwrap();
        assert_eq!(
            (c.protocol, c.transport, c.protocol_name()),
            (
                Protocol::SockJs,
                Transport::XhrStreaming,
                "sockjs-xhr-streaming"
            )
        );
        assert_eq!(c.sockets_per_client(), 2);
        let idle = parse(args(
            "--port 1 --scenario idle --protocol=sockjs-xhr-streaming",
        ))
        .unwrap();
        assert_eq!(idle.sockets_per_client(), 1);
        let ws = parse(args(
            "--port 1 --scenario echo --protocol sockjs-xhr-streaming --protocol ws",
        ))
        .unwrap();
        assert_eq!(
            (ws.transport, ws.sockets_per_client()),
            (Transport::WebSocket, 1)
        );
    }

    #[test]
    fn fanout() {
        let c = parse(args(
            "--port 9000 --scenario fanout --rates 10,20 --connections 100 --publish-port 9001",
        ))
        .unwrap();
        assert_eq!(c.scenario.endpoint(), "room");
        assert_eq!((c.publishers, c.publish_port), (10, Some(9001)));
        assert_eq!((c.clients(), c.senders_apart()), (110, 10));
        let room = parse(args("--port 9000 --scenario room --rates 10")).unwrap();
        assert_eq!(
            (room.clients(), room.senders_apart(), room.publish_port),
            (100, 0, None)
        );
        for bad in [
            "--port 9000 --scenario fanout",
            "--port 9000 --scenario fanout --rates 10 --publishers 0",
            "--port 9000 --scenario fanout --rates 10 --publish-port 0",
            "--port 9000 --scenario fanout --rates 10 --protocol sockjs-xhr-streaming",
        ] {
            assert!(matches!(parse(args(bad)), Err(CliError::Bad(_))), "{bad}");
        }
    }

    #[test]
    fn mistakes() {
        for bad in [
            "--scenario echo",
            "--port 9000",
            "--port 9000 --scenario room",
            "--port 9000 --scenario echo --payload 31",
            "--port 9000 --scenario echo --protocol http",
            "--port 9000 --scenario echo --bogus 1",
            "--port 9000 --scenario echo --connections",
            "--port 9000 --scenario room --rates 10,x",
            "--port 9000 --scenario echo --duration 0",
        ] {
            assert!(matches!(parse(args(bad)), Err(CliError::Bad(_))), "{bad}");
        }
        assert_eq!(parse(args("--help")), Err(CliError::Help));
    }
}
