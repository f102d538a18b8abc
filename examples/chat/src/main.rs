//! `proteus-chat <me> <peer>`: an end-to-end encrypted chat in the terminal.
//! `proteus-chat relay`: the relay on its own.

#![forbid(unsafe_code)]

use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use proteus_chat::DEFAULT_RELAY;
use proteus_chat::client::{self, ChatOptions};
use proteus_chat::relay::{self, RelayConfig};

const USAGE: &str = "\
usage: proteus-chat <me> <peer> [--relay ADDR] [--data DIR] [--no-embed]
       proteus-chat relay [--listen ADDR] [--data DIR | --db FILE] [--web DIR] [--web-pkg DIR]
                          [--rate N] [--burst N] [--claim-burst N] [--max-message BYTES]

  <me> <peer>    chat as <me> with <peer>, end-to-end encrypted. If no relay answers at a
                 loopback address, the chat runs one in its own process (not with --no-embed).
  relay          run the relay on its own.
  --relay ADDR   the relay's address (default 127.0.0.1:7417)
  --listen ADDR  where the relay listens (default 127.0.0.1:7417; port 0 picks a free one)
  --data DIR     data directory (default $XDG_DATA_HOME/proteus-chat or
                 ~/.local/share/proteus-chat): <me>'s state in DIR/<me>/, the relay's in DIR/relay/
  --db FILE      the relay's SQLite file (default DIR/relay/relay.sqlite)
  --web DIR      static files the relay serves at / (the web client; default, in a
                 checkout: examples/chat/web)
  --web-pkg DIR  the web package the relay serves at /pkg/ (default, in a checkout:
                 ffi/web/pkg once ffi/web/build.sh has built it)
  --rate N       requests per second per user (default 200), --burst N (default 3000)
  --claim-burst N  one-time prekeys one user may claim of another before getting the
                 last-resort one (default 10, then 10 an hour)
  --max-message BYTES  the largest envelope accepted (default 65536)";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let args = match parse(args) {
        Ok(Some(args)) => args,
        Ok(None) => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("proteus-chat: {e}\n{USAGE}");
            return ExitCode::FAILURE;
        }
    };
    match run(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("proteus-chat: {e}");
            ExitCode::FAILURE
        }
    }
}

struct Args {
    positional: Vec<String>,
    options: Vec<(String, String)>,
    no_embed: bool,
}

/// The options that take a value (`--name VALUE` or `--name=VALUE`).
const VALUED: [&str; 10] = [
    "relay",
    "data",
    "listen",
    "db",
    "web",
    "web-pkg",
    "rate",
    "burst",
    "claim-burst",
    "max-message",
];

/// The command line; `None` for `-h`/`--help`.
fn parse(args: Vec<String>) -> Result<Option<Args>, String> {
    use lexopt::Arg::{Long, Short, Value};
    use lexopt::ValueExt as _;
    let mut parsed = Args {
        positional: Vec::new(),
        options: Vec::new(),
        no_embed: false,
    };
    let mut parser = lexopt::Parser::from_args(args);
    let text = |e: lexopt::Error| e.to_string();
    while let Some(arg) = parser.next().map_err(text)? {
        match arg {
            Short('h') | Long("help") => return Ok(None),
            Long("no-embed") => parsed.no_embed = true,
            Long(name) if VALUED.contains(&name) => {
                let name = format!("--{name}");
                let value = parser
                    .value()
                    .map_err(|_| format!("{name} needs a value"))?
                    .string()
                    .map_err(text)?;
                parsed.options.push((name, value));
            }
            Value(value) => parsed.positional.push(value.string().map_err(text)?),
            arg => return Err(arg.unexpected().to_string()),
        }
    }
    Ok(Some(parsed))
}

impl Args {
    fn get(&self, name: &str) -> Option<&str> {
        self.options
            .iter()
            .rev()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    fn number(&self, name: &str) -> Result<Option<f64>, String> {
        self.get(name)
            .map(|v| {
                v.parse::<f64>()
                    .ok()
                    .filter(|n| n.is_finite() && *n > 0.0)
                    .ok_or_else(|| format!("{name}: {v:?} is not a positive number"))
            })
            .transpose()
    }
}

fn address(text: &str) -> Result<SocketAddr, String> {
    text.to_socket_addrs()
        .map_err(|e| format!("{text}: {e}"))?
        .next()
        .ok_or_else(|| format!("{text}: no address"))
}

fn data_dir(args: &Args) -> Result<PathBuf, String> {
    if let Some(dir) = args.get("--data") {
        return Ok(PathBuf::from(dir));
    }
    let base = std::env::var_os("XDG_DATA_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .filter(|v| !v.is_empty())
                .map(|h| PathBuf::from(h).join(".local").join("share"))
        })
        .ok_or("no data directory: set HOME or XDG_DATA_HOME, or pass --data DIR")?;
    Ok(base.join("proteus-chat"))
}

/// The web client's files beside the sources, when run from a checkout.
fn default_web_dir() -> Option<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("web");
    dir.join("index.html").is_file().then_some(dir)
}

/// The web package built in the checkout (`ffi/web/build.sh` writes it to `ffi/web/pkg`).
fn default_web_pkg_dir() -> Option<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../ffi/web/pkg");
    dir.join("index.js").is_file().then_some(dir)
}

fn run(args: Args) -> Result<(), String> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| format!("runtime: {e}"))?;
    let web_dir = args
        .get("--web")
        .map(PathBuf::from)
        .or_else(default_web_dir);
    let web_pkg_dir = args
        .get("--web-pkg")
        .map(PathBuf::from)
        .or_else(default_web_pkg_dir);
    let result = match args.positional.as_slice() {
        [relay] if relay == "relay" => {
            let listen = address(args.get("--listen").unwrap_or(DEFAULT_RELAY))?;
            let db = match args.get("--db") {
                Some(db) => PathBuf::from(db),
                None => data_dir(&args)?.join("relay").join("relay.sqlite"),
            };
            let mut config = RelayConfig::new(db);
            config.web_dir = web_dir;
            config.web_pkg_dir = web_pkg_dir;
            if let Some(rate) = args.number("--rate")? {
                config.rate_per_second = rate;
            }
            if let Some(burst) = args.number("--burst")? {
                config.burst = burst;
            }
            if let Some(burst) = args.number("--claim-burst")? {
                config.claim_burst = burst;
            }
            if let Some(max) = args.number("--max-message")? {
                config.max_envelope = max as usize;
            }
            runtime.block_on(serve_relay(listen, config))
        }
        [me, peer] => {
            let options = ChatOptions {
                me: me.clone(),
                peer: peer.clone(),
                relay: address(args.get("--relay").unwrap_or(DEFAULT_RELAY))?,
                data: data_dir(&args)?,
                embed: !args.no_embed,
                web_dir,
                web_pkg_dir,
            };
            runtime
                .block_on(client::run(options))
                .map_err(|e| e.to_string())
        }
        _ => Err(USAGE.to_owned()),
    };
    // The thread reading standard input may still be blocked in a read: do not wait for it.
    runtime.shutdown_timeout(Duration::from_millis(100));
    result
}

async fn serve_relay(listen: SocketAddr, config: RelayConfig) -> Result<(), String> {
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .map_err(|e| format!("cannot listen on {listen}: {e}"))?;
    let db = config.db.display().to_string();
    let page = config.web_dir.is_some() && config.web_pkg_dir.is_some();
    let web = match (&config.web_dir, &config.web_pkg_dir) {
        (Some(web), Some(pkg)) => {
            format!("; web client from {} and {}", web.display(), pkg.display())
        }
        (Some(web), None) => format!(
            "; web client from {} (no web package: build it with ffi/web/build.sh or pass --web-pkg)",
            web.display()
        ),
        (None, _) => String::new(),
    };
    let handle = relay::start(listener, config).map_err(|e| e.to_string())?;
    println!(
        "proteus-chat relay listening on {} (state: {db}{web})",
        handle.local_addr()
    );
    if page {
        println!("the web client: http://{}/", handle.local_addr());
    }
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let mut term = signal(SignalKind::terminate()).map_err(|e| e.to_string())?;
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    let _ = tokio::signal::ctrl_c().await;
    handle.shutdown().await;
    println!("relay stopped");
    Ok(())
}
