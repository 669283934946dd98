//! The command line of the HTTP mode (README.md, "HTTP mode"), chosen by
//! `--protocol http`. The runner is written against it: names and defaults
//! here must stay as documented there.

use super::request::Kind;

pub const USAGE: &str = "\
usage: switchboard-loadgen --protocol http --port <P> --scenario hello|json|param|post|static
    [--host 127.0.0.1] [--connections N]      keep-alive connections (default 100)
    [--pipeline K]                  requests in flight on each connection (default 1: no pipelining)
    [--path PATH]                   static: the file's URL path (e.g. /static/64k.bin)
    [--body-file FILE]              static: the file the server serves; every response is compared with it
    [--body-size BYTES]             post: the request body's size (default 65536)
    [--warmup SECS] [--duration SECS]   defaults 1 and 5; fractions allowed
    [--server-pid PID]              read the server's CPU and memory from /proc/PID";

/// Whether the arguments ask for the HTTP mode (`--protocol http`).
pub fn wanted(args: &[String]) -> bool {
    args.iter().enumerate().any(|(i, a)| {
        a == "--protocol=http"
            || (a == "--protocol" && args.get(i + 1).is_some_and(|v| v == "http"))
    })
}

#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    pub port: u16,
    pub host: String,
    pub kind: Kind,
    pub connections: usize,
    pub pipeline: u32,
    pub path: Option<String>,
    pub body_file: Option<String>,
    pub body_size: usize,
    pub warmup_s: f64,
    pub duration_s: f64,
    pub server_pid: Option<u32>,
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
    let bad = |m: String| Err(CliError::Bad(m));
    let (mut port, mut kind) = (None, None);
    let mut cfg = Config {
        port: 0,
        host: "127.0.0.1".to_string(),
        kind: Kind::Hello,
        connections: 100,
        pipeline: 1,
        path: None,
        body_file: None,
        body_size: 65536,
        warmup_s: 1.0,
        duration_s: 5.0,
        server_pid: None,
    };
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        if arg == "-h" || arg == "--help" {
            return Err(CliError::Help);
        }
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) => (f.to_string(), Some(v.to_string())),
            None => (arg.clone(), None),
        };
        if !flag.starts_with("--") {
            return bad(format!("unexpected argument {arg:?}"));
        }
        let Some(v) = inline.or_else(|| args.next()) else {
            return bad(format!("{flag} needs a value"));
        };
        let f = flag.as_str();
        match f {
            "--protocol" if v == "http" => {}
            "--protocol" => return bad(format!("--protocol: the HTTP mode takes http, not {v:?}")),
            "--port" => port = Some(value(f, &v)?),
            "--host" => cfg.host = v,
            "--scenario" => {
                kind = Some(Kind::parse(&v).ok_or_else(|| {
                    CliError::Bad(format!("--scenario: unknown HTTP scenario {v:?}"))
                })?)
            }
            "--connections" => cfg.connections = value(f, &v)?,
            "--pipeline" => cfg.pipeline = value(f, &v)?,
            "--path" => cfg.path = Some(v),
            "--body-file" => cfg.body_file = Some(v),
            "--body-size" => cfg.body_size = value(f, &v)?,
            "--warmup" => cfg.warmup_s = seconds(f, &v)?,
            "--duration" => cfg.duration_s = seconds(f, &v)?,
            "--server-pid" => cfg.server_pid = Some(value(f, &v)?),
            _ => return bad(format!("unknown option {flag}")),
        }
    }
    cfg.port = port.ok_or_else(|| CliError::Bad("--port is required".into()))?;
    cfg.kind = kind.ok_or_else(|| CliError::Bad("--scenario is required".into()))?;
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
    if cfg.pipeline == 0 || cfg.pipeline > 1024 {
        return bad("--pipeline must be 1 to 1024");
    }
    if cfg.duration_s <= 0.0 {
        return bad("--duration must be above 0");
    }
    if cfg.body_size > 64 << 20 {
        return bad("--body-size must be at most 64 MiB");
    }
    let is_static = cfg.kind == Kind::Static;
    if is_static != cfg.path.is_some() || is_static != cfg.body_file.is_some() {
        return bad("--path and --body-file go with the static scenario, which needs both");
    }
    if cfg
        .path
        .as_ref()
        .is_some_and(|p| !p.starts_with('/') || p.bytes().any(|b| b <= b' ' || b == 0x7f))
    {
        return bad("--path must start with / and hold no spaces or control characters");
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
    fn selects_the_mode() {
        assert!(wanted(&args("--port 1 --protocol http --scenario hello")));
        assert!(wanted(&args("--protocol=http")));
        assert!(!wanted(&args("--port 1 --protocol ws --scenario echo")));
        assert!(!wanted(&args("--port 1 --scenario echo")));
    }

    #[test]
    fn defaults_and_options() {
        let c = parse(args("--protocol http --port 9000 --scenario hello")).unwrap();
        assert_eq!(
            (c.port, c.kind, c.connections, c.pipeline),
            (9000, Kind::Hello, 100, 1)
        );
        assert_eq!((c.warmup_s, c.duration_s, c.body_size), (1.0, 5.0, 65536));
        let c = parse(args(
            "--protocol http --port=9 --scenario static --path /static/1m.bin --body-file /tmp/x \
             --connections 10 --pipeline 16 --warmup 0.5 --duration 2 --server-pid 7 --host localhost",
        ))
        .unwrap();
        assert_eq!(c.path.as_deref(), Some("/static/1m.bin"));
        assert_eq!(c.body_file.as_deref(), Some("/tmp/x"));
        assert_eq!((c.connections, c.pipeline, c.server_pid), (10, 16, Some(7)));
        assert_eq!(
            (c.warmup_s, c.duration_s, c.host.as_str()),
            (0.5, 2.0, "localhost")
        );
        let c = parse(args(
            "--protocol http --port 9 --scenario post --body-size 100",
        ))
        .unwrap();
        assert_eq!((c.kind, c.body_size), (Kind::Post, 100));
    }

    #[test]
    fn mistakes() {
        for bad in [
            "--protocol http --scenario hello",
            "--protocol http --port 9000",
            "--protocol http --port 9000 --scenario echo",
            "--protocol ws --port 9000 --scenario hello",
            "--protocol http --port 9000 --scenario hello --pipeline 0",
            "--protocol http --port 9000 --scenario static",
            "--protocol http --port 9000 --scenario static --path /a",
            "--protocol http --port 9000 --scenario hello --path /a --body-file /b",
            "--protocol http --port 9000 --scenario static --path a --body-file /b",
            "--protocol http --port 9000 --scenario hello --duration 0",
            "--protocol http --port 9000 --scenario hello --bogus 1",
        ] {
            assert!(matches!(parse(args(bad)), Err(CliError::Bad(_))), "{bad}");
        }
        assert_eq!(parse(args("--help")), Err(CliError::Help));
    }
}
