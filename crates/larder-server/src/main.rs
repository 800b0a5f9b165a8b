//! The `larder` binary: configuration, logging, listeners, and the `cache` tool.
//!
//! `larder [--port N] [--config FILE] [--<any config parameter> VALUE]...` starts the server;
//! `larder cache <build|get|info|verify|bench>` works with cache files.

mod acl_door;
mod alloc;
mod cache_cli;
mod conn;
mod http;
mod items;
mod memcache;
mod net;
mod persist;
mod repl;
mod resp;
mod tls;

use std::net::ToSocketAddrs;
use std::sync::Arc;

use anyhow::{bail, Context};
use clap::{Arg, ArgAction, Command, FromArgMatches, Subcommand};
use larder_commands::config::{self, Config, Param, PARAMS};
use larder_commands::state::ServerInfo;
use larder_commands::Server;

#[global_allocator]
static GLOBAL: alloc::Counting = alloc::Counting;

fn cli() -> Command {
    let mut cmd = Command::new("larder")
        .version(env!("CARGO_PKG_VERSION"))
        .about("A Redis- and memcached-compatible key-value server")
        .args_conflicts_with_subcommands(true)
        .subcommand(cache_cli::CacheCommand::augment_subcommands(
            Command::new("cache")
                .about("Build, read, verify and benchmark immutable cache files")
                .subcommand_required(true),
        ))
        .subcommand(
            Command::new("import")
                .about("Turn a Redis RDB file (dump.rdb) into a new larder data directory")
                .arg(Arg::new("FILE").required(true).help("the RDB file"))
                .arg(
                    Arg::new("dir")
                        .long("dir")
                        .default_value("./larder-data")
                        .help("the data directory to create (must hold no larder data)"),
                )
                .arg(
                    Arg::new("params")
                        .num_args(0..)
                        .allow_hyphen_values(true)
                        .trailing_var_arg(true)
                        .help("--<parameter> <value> pairs, e.g. the encoding limits"),
                ),
        )
        .subcommand(
            Command::new("check-data")
                .about("Check a data directory's snapshots and logs; --fix cuts a damaged log")
                .arg(
                    Arg::new("DIR")
                        .required(true)
                        .help("the data directory (--dir)"),
                )
                .arg(
                    Arg::new("fix")
                        .long("fix")
                        .action(ArgAction::SetTrue)
                        .help("cut a damaged log at the damage and set aside what follows"),
                ),
        )
        // A repeated flag takes its last value, as redis-server's options do.
        .args_override_self(true)
        .arg(
            Arg::new("config")
                .long("config")
                .value_name("FILE")
                .help("redis.conf-style file of `name value` lines"),
        )
        .arg(
            Arg::new("config-file")
                .value_name("CONFIG_FILE")
                .help("config file as the first positional argument (as redis-server takes it)"),
        );
    for d in PARAMS {
        cmd = cmd.arg(
            Arg::new(d.name)
                .long(d.name)
                .value_name("VALUE")
                .action(ArgAction::Set)
                .allow_hyphen_values(true)
                .help(format!(
                    "{} [default: {}]",
                    d.help,
                    if d.default.is_empty() {
                        "\"\""
                    } else {
                        d.default
                    }
                )),
        );
    }
    cmd
}

/// The config file without its `user` lines (blank lines in their place, so that errors still
/// name the right line), which go to `users` split into words.
fn take_user_lines(text: &str, users: &mut Vec<Vec<Vec<u8>>>) -> String {
    let mut rest = String::with_capacity(text.len());
    for line in text.lines() {
        let words = config::split_config_line(line.trim());
        match words {
            Some(w) if w.first().is_some_and(|f| f.eq_ignore_ascii_case("user")) => {
                users.push(w.into_iter().map(String::into_bytes).collect());
            }
            _ => rest.push_str(line),
        }
        rest.push('\n');
    }
    rest
}

fn main() {
    if let Err(e) = run() {
        eprintln!("larder: {e:#}");
        std::process::exit(1);
    }
}

fn run() -> anyhow::Result<()> {
    let matches = cli().get_matches();
    match matches.subcommand() {
        Some(("cache", sub)) => {
            return cache_cli::run(cache_cli::CacheCommand::from_arg_matches(sub)?);
        }
        Some(("import", sub)) => {
            let file = sub.get_one::<String>("FILE").context("FILE is required")?;
            let dir = sub.get_one::<String>("dir").context("--dir")?;
            let config = Config::new();
            let params: Vec<&String> = sub
                .get_many::<String>("params")
                .into_iter()
                .flatten()
                .collect();
            for pair in params.chunks(2) {
                let name = pair[0].trim_start_matches("--");
                let d =
                    config::lookup(name).with_context(|| format!("unknown parameter --{name}"))?;
                let value = pair
                    .get(1)
                    .with_context(|| format!("--{name} needs a value"))?;
                config
                    .apply(d, value)
                    .map_err(|e| anyhow::anyhow!("--{name} {value}: {e}"))?;
            }
            init_logging(&config);
            let keys = persist::import::run(
                std::path::Path::new(file),
                std::path::Path::new(dir),
                config,
            )?;
            println!("imported {keys} keys from {file} into {dir}");
            return Ok(());
        }
        Some(("check-data", sub)) => {
            let dir = sub.get_one::<String>("DIR").context("DIR is required")?;
            let code = persist::check::run(
                std::path::Path::new(dir),
                sub.get_flag("fix"),
                &mut std::io::stdout(),
            )?;
            std::process::exit(code);
        }
        _ => {}
    }
    let config = Config::new();
    // `user` lines of the config file define ACL users, applied once the server exists.
    let mut user_lines: Vec<Vec<Vec<u8>>> = Vec::new();
    let config_file = matches
        .get_one::<String>("config")
        .or_else(|| matches.get_one::<String>("config-file"))
        .cloned();
    if let Some(path) = &config_file {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading config file {path}"))?;
        let text = take_user_lines(&text, &mut user_lines);
        let pairs =
            config::parse_file(&text).map_err(|e| anyhow::anyhow!("config file {path}: {e}"))?;
        for (name, value) in pairs {
            let d = config::lookup(&name).context("config parameter vanished")?;
            config
                .apply(d, &value)
                .map_err(|e| anyhow::anyhow!("config file {path}: {name}: {e}"))?;
        }
    }
    // Flags override the file, as redis-server's command-line options do.
    for d in PARAMS {
        if let Some(v) = matches.get_one::<String>(d.name) {
            config
                .apply(d, v)
                .map_err(|e| anyhow::anyhow!("--{} {v}: {e}", d.name))?;
        }
    }
    init_logging(&config);
    if config.num(Param::DisableThp) != 0 {
        disable_thp();
    }

    let threads = match config.num(Param::Threads) {
        0 => default_threads(),
        n => n as usize,
    };
    let port = config.num(Param::Port) as u16;
    let bind = config.text(Param::Bind);
    let (listeners, bound_port) = listen_on(&bind, port, "RESP")?;
    if listeners.is_empty() {
        bail!("nothing to listen on: bind is empty");
    }
    // The memcached and HTTP doors listen on the same addresses; port 0 disables each.
    let door = |param, what| -> anyhow::Result<(Vec<std::net::TcpListener>, u16)> {
        match config.num(param) as u16 {
            0 => Ok((Vec::new(), 0)),
            port => listen_on(&bind, port, what),
        }
    };
    let (mc_listeners, mc_port) = door(Param::MemcachedPort, "memcached")?;
    let (http_listeners, http_port) = door(Param::HttpPort, "HTTP")?;

    // The TLS ports, each door's beside its plain one; they need a certificate and key that
    // load.
    let tls_ports = [
        (Param::TlsPort, net::Door::Resp, "TLS"),
        (
            Param::MemcachedTlsPort,
            net::Door::Memcache,
            "memcached TLS",
        ),
        (Param::HttpTlsPort, net::Door::Http, "HTTPS"),
    ];
    let mut tls_doors = Vec::new();
    if tls_ports.iter().any(|&(p, _, _)| config.num(p) != 0) {
        let tls = tls::Tls::from_config(&config)
            .map_err(|why| anyhow::anyhow!("cannot start the TLS ports: {why}"))?;
        for (param, door, what) in tls_ports {
            let port = config.num(param) as u16;
            if port != 0 {
                let (sockets, port) = listen_on(&bind, port, what)?;
                tracing::info!(port, "{what} port ready");
                tls_doors.push(net::Listeners {
                    door,
                    sockets,
                    tls: Some(Arc::clone(&tls)),
                });
            }
        }
        tls.reload_on_config_set(&config);
    }

    let mut server = Server::new(config, threads);
    server.used_memory = alloc::used_bytes;
    *server.info.lock() = ServerInfo {
        tcp_port: bound_port,
        memcached_port: mc_port,
        http_port,
        threads,
        executable: std::env::current_exe()
            .map(|p| p.display().to_string())
            .unwrap_or_default(),
        config_file: config_file
            .as_deref()
            .map(|p| {
                std::fs::canonicalize(p).map_or_else(|_| p.to_string(), |c| c.display().to_string())
            })
            .unwrap_or_default(),
    };
    larder_commands::acl::file::load_at_startup(&server, &user_lines)
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let server = Arc::new(server);
    let persistence = persist::start(&server)?;
    let _replication = repl::start(&server)?;
    tracing::info!(
        version = env!("CARGO_PKG_VERSION"),
        redis_compat = "7.0.15",
        pid = std::process::id(),
        bind = %bind,
        port = bound_port,
        threads,
        databases = server.keyspace.db_count(),
        "larder ready to accept connections"
    );
    if !mc_listeners.is_empty() {
        tracing::info!(
            port = mc_port,
            "memcached door ready (text, meta and binary protocols)"
        );
    }
    if !http_listeners.is_empty() {
        tracing::info!(
            port = http_port,
            "HTTP door ready (key API, commands, SSE, /metrics, /ui)"
        );
    }
    let mut doors = vec![
        net::Listeners {
            door: net::Door::Resp,
            sockets: listeners,
            tls: None,
        },
        net::Listeners {
            door: net::Door::Memcache,
            sockets: mc_listeners,
            tls: None,
        },
        net::Listeners {
            door: net::Door::Http,
            sockets: http_listeners,
            tls: None,
        },
    ];
    doors.append(&mut tls_doors);
    net::serve(Arc::clone(&server), doors, threads)?;
    persistence.shutdown(*server.shutdown_save.lock());
    tracing::info!("larder is now ready to exit, bye bye");
    Ok(())
}

/// Worker threads when `--threads 0` (the default): one per core, but leave a core to the
/// rest of the machine (clients, the expiry thread) on small machines, where an extra
/// epoll thread competing with the load generator costs more than it gives.
/// As Redis's `disable-thp`: transparent huge pages off for this process. mimalloc asks for
/// them (madvise), and while 5M keys loaded, page faults that each zeroed 2 MiB took a large
/// share of the server's CPU and stalled clients for tens of milliseconds
/// (`bench/load_pause.py` counts probes over 10 ms; docs/benchmarks.md has the figures). Redis only acts when the system setting is
/// `always`; larder acts whatever it is, since its allocator opts in under `madvise` too.
#[allow(unsafe_code)]
fn disable_thp() {
    // SAFETY: PR_SET_THP_DISABLE takes plain integers and reads or writes no memory of ours.
    let rc = unsafe { libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0) };
    if rc != 0 {
        tracing::warn!(
            error = %std::io::Error::last_os_error(),
            "could not turn transparent huge pages off"
        );
    }
}

fn default_threads() -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    match cores {
        0..=2 => 1,
        3..=8 => cores - 1,
        _ => cores - 2,
    }
}

/// Listens on `port` at every `bind` address (`what` names the port in errors); returns the
/// sockets and the port bound.
fn listen_on(
    bind: &str,
    mut port: u16,
    what: &str,
) -> anyhow::Result<(Vec<std::net::TcpListener>, u16)> {
    let mut sockets = Vec::new();
    for host in bind.split_whitespace() {
        let host = host.trim_start_matches('-');
        let addr = (host, port)
            .to_socket_addrs()
            .with_context(|| format!("resolving bind address {host}"))?
            .next()
            .with_context(|| format!("no address for {host}"))?;
        let l = listen(addr).with_context(|| format!("listening on {addr} ({what})"))?;
        port = l.local_addr()?.port();
        sockets.push(l);
    }
    Ok((sockets, port))
}

fn listen(addr: std::net::SocketAddr) -> std::io::Result<std::net::TcpListener> {
    let domain = socket2::Domain::for_address(addr);
    let s = socket2::Socket::new(domain, socket2::Type::STREAM, Some(socket2::Protocol::TCP))?;
    s.set_reuse_address(true)?;
    if addr.is_ipv6() {
        s.set_only_v6(true)?;
    }
    s.bind(&addr.into())?;
    // Redis's default tcp-backlog.
    s.listen(511)?;
    Ok(s.into())
}

/// The tracing filter of a `loglevel` value (Redis's names).
fn log_filter(loglevel: &str) -> &'static str {
    match loglevel {
        "debug" => "debug",
        "verbose" => "info",
        "warning" => "warn",
        "nothing" => "off",
        _ => "info",
    }
}

/// Starts logging at `loglevel` (or `LARDER_LOG`'s filter), and makes CONFIG SET loglevel
/// (the memcached door's `verbosity` too) change the filter at run time.
fn init_logging(config: &Config) {
    use tracing_subscriber::fmt::writer::BoxMakeWriter;
    let level = log_filter(&config.text(Param::Loglevel));
    let filter = tracing_subscriber::EnvFilter::try_from_env("LARDER_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(level));
    let logfile = config.text(Param::Logfile);
    let mut ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let mut failed = None;
    let writer = if logfile.is_empty() {
        BoxMakeWriter::new(std::io::stderr)
    } else {
        match std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&logfile)
        {
            Ok(f) => {
                ansi = false;
                BoxMakeWriter::new(Arc::new(f))
            }
            Err(e) => {
                failed = Some(e);
                BoxMakeWriter::new(std::io::stderr)
            }
        }
    };
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_target(false)
        .with_ansi(ansi)
        .with_writer(writer)
        .with_filter_reloading();
    let reload = builder.reload_handle();
    builder.init();
    if let Some(e) = failed {
        tracing::warn!(error = %e, logfile = %logfile, "cannot open logfile, logging to stderr");
    }
    config.add_hook(config::ApplyHook {
        params: &[Param::Loglevel],
        apply: Box::new(move |after| {
            let filter = tracing_subscriber::EnvFilter::new(log_filter(&after(Param::Loglevel)));
            reload.reload(filter).map_err(|e| e.to_string())
        }),
    });
}
