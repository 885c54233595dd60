//! hotkv-server: serves a hotkv store over the Redis protocol.

mod accepted_settings;
mod access_clock;
mod acl_file;
mod background_save;
mod blocked_keys;
mod clients;
mod command_stats;
mod commands;
mod config;
mod connection;
mod db;
mod dump_payload;
mod engine_keys;
mod engine_store;
mod entry;
mod eviction;
mod field_nodes;
mod gate_hold;
mod gathered_writes;
mod geohash;
mod glob;
mod hll;
mod instantaneous;
mod io_threads;
mod keyspace_events;
mod latency;
mod libraries;
mod list_nodes;
mod listener;
mod long_double;
mod memory;
mod migrate_sockets;
mod monitor;
mod nodes;
mod packed;
mod partial_sort;
mod pause;
mod pubsub;
mod rdb_save;
mod replace_file;
mod running_script;
mod score_nodes;
mod script_bit;
mod script_json;
mod script_msgpack;
mod script_thread;
mod scripting;
mod server;
mod stream;
mod stream_nodes;
mod stream_pending;
mod stripe_lock;
mod stripes;
mod table_pages;
mod tracking;

use std::sync::Arc;

use clap::Parser;
use tokio::net::TcpListener;

use crate::config::{Config, EngineKind};
use crate::db::Db;
use crate::io_threads::IoThreads;
use crate::server::Server;

/// The Redis version hotkv answers as (HELLO, INFO): the command set it follows.
pub const REDIS_VERSION: &str = "7.0.0";

/// A Redis-protocol key-value server built on the HotRing index.
///
/// Settings come from the defaults, then CONFIG_FILE, then these flags; every
/// setting but the listener's (bind, port, protected-mode, io-threads) and the
/// engine's (engine, dir, fsync, cache-size, memtable-size) can be changed later with
/// CONFIG SET.
#[derive(Parser, Debug)]
#[command(name = "hotkv-server", version)]
struct Args {
    /// A config file in redis.conf syntax: `name value` per line, `#` comments, with
    /// the names of these flags (and CONFIG GET).
    config_file: Option<std::path::PathBuf>,
    /// Address to listen on [default: 127.0.0.1]. Anything but loopback needs a
    /// requirepass or --protected-mode no.
    #[arg(long)]
    bind: Option<String>,
    /// TCP port [default: 6379] (0: any free port; the log's "ready" line names it).
    #[arg(long)]
    port: Option<String>,
    /// Where the keyspace lives [default: lsm]: `lsm`, the LSM tree in --dir, durable
    /// per --fsync; or `memory`, the HotRing index alone (fastest; kept only in the RDB
    /// file, dump.rdb in --dir, that SAVE and the `save` schedule write, as Redis's).
    #[arg(long)]
    engine: Option<String>,
    /// The lsm engine's directory, or where the memory engine's RDB file is; created if
    /// missing [default: ./hotkv-data]. One lsm server at a time may use it.
    #[arg(long)]
    dir: Option<String>,
    /// When the lsm engine's log reaches the disk [default: everysec]: `always`, before
    /// each write is acknowledged (concurrent writes share one sync); `everysec`, once a
    /// second (a machine crash loses at most about a second; a process crash nothing);
    /// `no`, when the OS decides.
    #[arg(long)]
    fsync: Option<String>,
    /// The lsm engine's block cache, with a unit as in Redis [default: 64mb].
    #[arg(long)]
    cache_size: Option<String>,
    /// The lsm engine's memtable size [default: 64mb]; up to three are in memory at
    /// once (one taking writes, two being flushed).
    #[arg(long)]
    memtable_size: Option<String>,
    /// `no` allows listening on a non-loopback address without a password
    /// [default: yes].
    #[arg(long)]
    protected_mode: Option<String>,
    /// Password clients must give with AUTH (or HELLO ... AUTH) [default: none].
    #[arg(long)]
    requirepass: Option<String>,
    /// Most clients connected at once; more are refused [default: 10000].
    #[arg(long)]
    maxclients: Option<String>,
    /// Memory limit, with a unit as in Redis (100mb, 2gb) [default: 0, no limit]. On
    /// the lsm engine the process's memory includes the memtables and block cache,
    /// which evicting keys does not shrink: under a limit below them every command
    /// evicts until no key is left.
    #[arg(long)]
    maxmemory: Option<String>,
    /// What to do over maxmemory: noeviction (writes fail); allkeys-lru or allkeys-lfu
    /// (both evict the coldest of sampled keys by the index's access counters, on lsm
    /// by its access clock and LFU counters),
    /// allkeys-random; or the same among keys with a TTL only: volatile-lru,
    /// volatile-lfu, volatile-random, and volatile-ttl (the nearest deadline first)
    /// [default: noeviction].
    #[arg(long)]
    maxmemory_policy: Option<String>,
    /// Close clients idle this many seconds [default: 0, never].
    #[arg(long)]
    timeout: Option<String>,
    /// Threads serving connections [default: 0, one per core]. On a machine shared
    /// with the load generator, fewer threads than cores can cut tail latency.
    #[arg(long)]
    io_threads: Option<String>,
    /// Who may run DEBUG (SLEEP, OBJECT, DIGEST, RELOAD...), which can stall or empty
    /// the server: `no`, nobody; `local`, clients on the loopback address; `yes`,
    /// everyone [default: no, as Redis].
    #[arg(long)]
    enable_debug_command: Option<String>,
}

fn main() {
    use std::io::IsTerminal;
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .init();
    let args = Args::parse();
    let config = match configure(&args) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("hotkv-server: {e}");
            std::process::exit(2);
        }
    };
    // This thread accepts connections and runs the background cycles (memory
    // accounting, active expiry); the io threads serve the connections.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    let db = match open_db(&config) {
        Ok(db) => db,
        Err(e) => {
            eprintln!(
                "hotkv-server: cannot open the {} engine: {e}",
                config.engine.name()
            );
            std::process::exit(1);
        }
    };
    let served = runtime.block_on(serve(config, db));
    if let Err(e) = served {
        eprintln!("hotkv-server: {e}");
        std::process::exit(1);
    }
}

/// The keyspace on the configured engine, recovered from its directory.
fn open_db(config: &Config) -> engine::Result<Db> {
    match config.engine {
        EngineKind::Memory => Ok(Db::default()),
        EngineKind::Lsm => {
            let started = std::time::Instant::now();
            let options = lsm::Options {
                fsync: config.fsync(),
                // Connections write the log before each batch of replies.
                defer_log_writes: true,
                block_cache_bytes: config.cache_size as usize,
                memtable_bytes: config.memtable_size as usize,
                ..lsm::Options::default()
            };
            let db = Db::on_engine(Box::new(lsm::Lsm::open(&config.dir, options)?))?;
            tracing::info!(
                dir = %config.dir.display(),
                keys = db.len(),
                millis = started.elapsed().as_millis() as u64,
                "engine opened"
            );
            Ok(db)
        }
    }
}

fn configure(args: &Args) -> Result<Config, String> {
    let mut config = Config::default();
    if let Some(path) = &args.config_file {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        config.load_file(&text, &path.display().to_string())?;
        config.file = Some(std::path::absolute(path).unwrap_or_else(|_| path.clone()));
    }
    let flags = [
        ("bind", &args.bind),
        ("port", &args.port),
        ("engine", &args.engine),
        ("dir", &args.dir),
        ("fsync", &args.fsync),
        ("cache-size", &args.cache_size),
        ("memtable-size", &args.memtable_size),
        ("protected-mode", &args.protected_mode),
        ("requirepass", &args.requirepass),
        ("maxclients", &args.maxclients),
        ("maxmemory", &args.maxmemory),
        ("maxmemory-policy", &args.maxmemory_policy),
        ("timeout", &args.timeout),
        ("io-threads", &args.io_threads),
        ("enable-debug-command", &args.enable_debug_command),
    ];
    for (name, value) in flags {
        if let Some(value) = value {
            config
                .set_at_startup(name, value)
                .map_err(|e| format!("--{name}: {e}"))?;
        }
    }
    config.check()?;
    Ok(config)
}

async fn serve(config: Config, db: Db) -> std::io::Result<()> {
    let listener = TcpListener::bind((config.bind, config.port())).await?;
    let io_threads = IoThreads::start(match config.io_threads {
        0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
        n => n,
    })?;
    let mut server = Server::new(config, db);
    server.io_threads = Some(io_threads.active_threads());
    let server = Arc::new(server);
    for declared in &server.config.users {
        server.users.declare(&declared[0], &declared[1..]);
    }
    if let Some((name, path)) = acl_file::configured(&server) {
        acl_file::load(&server, &name, &path).map_err(|errors| {
            std::io::Error::other(format!("Aborting startup because of ACL errors: {errors}"))
        })?;
        tracing::info!(file = %path.display(), users = server.users.all().len(), "ACL file loaded");
    }
    if server.config.engine == EngineKind::Memory {
        let started = std::time::Instant::now();
        if let Some(loaded) = server.load_rdb_file().map_err(std::io::Error::other)? {
            tracing::info!(
                file = %rdb_save::path(&server).display(),
                keys = loaded.keys,
                expired = loaded.expired,
                libraries = loaded.libraries,
                millis = started.elapsed().as_millis() as u64,
                "RDB file loaded"
            );
        }
    }
    let libraries = commands::function::load_saved(&server).map_err(std::io::Error::other)?;
    if libraries > 0 {
        tracing::info!(libraries, "function libraries loaded");
    }
    server.refresh_memory();
    tracing::info!(addr = %listener.local_addr()?, engine = server.config.engine.name(), "ready to accept connections");
    let background = tokio::spawn({
        let server = server.clone();
        async move { server.background().await }
    });
    let mut tasks = tokio::task::JoinSet::new();
    // One listener for the whole life of the server: a signal that arrives while the
    // loop is busy elsewhere is kept for the next poll, not lost.
    let stop_signal = signal();
    tokio::pin!(stop_signal);
    let mut shutdown = server.shutdown_signal();
    let mut listener = Some(listener);
    let mut listener_moves = server
        .listener_moves
        .take_receiver()
        .expect("one accept loop per server");
    loop {
        tokio::select! {
            accepted = accept(&listener) => {
                let (socket, peer) = match accepted {
                    Ok(a) => a,
                    Err(e) => {
                        tracing::warn!(error = %e, "accept failed");
                        continue;
                    }
                };
                let _ = socket.set_nodelay(true);
                // Registered with this thread's reactor; re-registered on the io thread.
                let socket = match socket.into_std() {
                    Ok(s) => s,
                    Err(e) => {
                        tracing::warn!(%peer, error = %e, "cannot hand over connection");
                        continue;
                    }
                };
                tasks.spawn(connection::serve_accepted(socket, peer, server.clone(), io_threads.seat()));
            }
            Some(moved) = listener_moves.recv() => match moved.map(TcpListener::from_std).transpose() {
                Ok(Some(moved)) => {
                    if let Ok(addr) = moved.local_addr() {
                        tracing::info!(%addr, "listening on a new port");
                    }
                    listener = Some(moved);
                }
                Ok(None) => {
                    tracing::info!("port 0: no longer listening for connections");
                    listener = None;
                }
                Err(e) => tracing::warn!(error = %e, "cannot listen on the new port; kept the old"),
            },
            _ = &mut stop_signal => break,
            _ = shutdown.changed() => break,
            Some(_) = tasks.join_next(), if !tasks.is_empty() => {}
        }
    }
    // Stop accepting; let connections finish the requests they already read.
    tracing::info!("shutting down");
    drop(listener);
    server.request_shutdown();
    while tasks.join_next().await.is_some() {}
    background.abort();
    let _ = background.await;
    // The last connection is gone: make every acknowledged write durable, in place
    // of a background save that would hold less, as Redis does.
    server.background_save.kill();
    if server.saves_at_shutdown() {
        server.save().map_err(std::io::Error::other)?;
        tracing::info!(file = %rdb_save::path(&server).display(), "RDB file saved");
    }
    server
        .db
        .close()
        .map_err(|e| std::io::Error::other(format!("closing the engine: {e}")))?;
    tracing::info!("engine closed");
    Ok(())
}

/// The next connection on `listener`; never, without one.
async fn accept(
    listener: &Option<TcpListener>,
) -> std::io::Result<(tokio::net::TcpStream, std::net::SocketAddr)> {
    match listener {
        Some(listener) => listener.accept().await,
        None => std::future::pending().await,
    }
}

async fn signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .expect("SIGTERM handler");
        tokio::select! {
            _ = ctrl_c => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    let _ = ctrl_c.await;
}
