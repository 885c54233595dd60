//! hotkv-server: serves a hotkv store over the Redis protocol.

mod commands;
mod connection;
mod db;

use std::net::IpAddr;
use std::sync::Arc;

use clap::Parser;
use tokio::net::TcpListener;

/// A Redis-protocol key-value server built on the HotRing index.
#[derive(Parser, Debug)]
#[command(name = "hotkv-server", version)]
struct Args {
    /// Address to listen on. Anything but loopback needs --protected-mode no until
    /// AUTH lands.
    #[arg(long, default_value = "127.0.0.1")]
    bind: IpAddr,
    /// TCP port (0: any free port; the log's "ready" line names it).
    #[arg(long, default_value_t = 6379)]
    port: u16,
    /// Storage engine. Only `memory` (the HotRing index) exists so far.
    #[arg(long, default_value = "memory")]
    engine: String,
    /// `no` allows listening on a non-loopback address without a password.
    #[arg(long, default_value = "yes")]
    protected_mode: String,
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
    if let Err(e) = check(&args) {
        eprintln!("hotkv-server: {e}");
        std::process::exit(2);
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    if let Err(e) = runtime.block_on(serve(args)) {
        eprintln!("hotkv-server: {e}");
        std::process::exit(1);
    }
}

fn check(args: &Args) -> Result<(), String> {
    if args.engine != "memory" {
        return Err(format!(
            "engine '{}' is not available yet: use --engine memory",
            args.engine
        ));
    }
    if !matches!(args.protected_mode.as_str(), "yes" | "no") {
        return Err(format!(
            "--protected-mode takes yes or no, not '{}'",
            args.protected_mode
        ));
    }
    if !args.bind.is_loopback() && args.protected_mode == "yes" {
        return Err(format!(
            "refusing to listen on {} without a password; pass --protected-mode no to allow it",
            args.bind
        ));
    }
    Ok(())
}

async fn serve(args: Args) -> std::io::Result<()> {
    let listener = TcpListener::bind((args.bind, args.port)).await?;
    let db = Arc::new(db::Db::new());
    tracing::info!(addr = %listener.local_addr()?, engine = %args.engine, "ready to accept connections");
    let shutdown = tokio::sync::watch::channel(false);
    let mut tasks = tokio::task::JoinSet::new();
    // One listener for the whole life of the server: a signal that arrives while the
    // loop is busy elsewhere is kept for the next poll, not lost.
    let stop_signal = signal();
    tokio::pin!(stop_signal);
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let (socket, peer) = match accepted {
                    Ok(a) => a,
                    Err(e) => {
                        tracing::warn!(error = %e, "accept failed");
                        continue;
                    }
                };
                let _ = socket.set_nodelay(true);
                let (db, stop) = (db.clone(), shutdown.1.clone());
                tasks.spawn(async move {
                    if let Err(e) = connection::Connection::new(socket, db).run(stop).await {
                        tracing::info!(%peer, error = %e, "connection closed");
                    }
                });
            }
            _ = &mut stop_signal => break,
            Some(_) = tasks.join_next(), if !tasks.is_empty() => {}
        }
    }
    // Stop accepting; let connections finish the requests they already read.
    tracing::info!("shutting down");
    drop(listener);
    let _ = shutdown.0.send(true);
    while tasks.join_next().await.is_some() {}
    Ok(())
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
