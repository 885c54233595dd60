//! The threads that serve connections. Each runs its own single-threaded tokio runtime,
//! and the acceptor hands every new connection to the thread serving the fewest, where
//! it stays for life.
//!
//! Why not tokio's multi-threaded scheduler: there a connection's task may be woken on
//! one core and stolen by another, and every wakeup goes through shared run queues; for
//! a request that costs a few hundred nanoseconds of work, that bookkeeping and the
//! cache lines it moves are a large share. Pinning connections keeps each request on one
//! core from read to reply, as Redis's io-threads and memcached's workers do. Commands
//! still reach the store directly: the index is lock-free, so threads need no hand-off.

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use tokio::runtime::Handle;
use tokio::sync::oneshot;
use tokio::task::JoinSet;

pub struct IoThreads {
    threads: Vec<IoThread>,
}

struct IoThread {
    handle: Handle,
    /// Connections this thread serves now.
    live: Arc<AtomicUsize>,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// Counts a connection as live on its thread until the task ends, however it ends.
struct Live(Arc<AtomicUsize>);

impl Drop for Live {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

impl IoThreads {
    /// Starts `n` threads (at least one).
    pub fn start(n: usize) -> std::io::Result<IoThreads> {
        let mut threads = Vec::with_capacity(n.max(1));
        for i in 0..n.max(1) {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?;
            let handle = runtime.handle().clone();
            let (stop, stopped) = oneshot::channel::<()>();
            let thread = std::thread::Builder::new()
                .name(format!("hotkv-io-{i}"))
                .spawn(move || {
                    // Tasks spawned through the handle run while this thread drives the
                    // runtime; a dropped sender ends it as a sent stop does.
                    let _ = runtime.block_on(stopped);
                })?;
            threads.push(IoThread {
                handle,
                live: Arc::default(),
                stop: Some(stop),
                thread: Some(thread),
            });
        }
        Ok(IoThreads { threads })
    }

    /// Runs `task` on the thread serving the fewest connections, tracked in `tasks`.
    /// The task starts on that thread, so it is where sockets must be registered.
    pub fn spawn<F>(&self, tasks: &mut JoinSet<()>, task: F)
    where
        F: Future<Output = ()> + Send + 'static,
    {
        let least = self
            .threads
            .iter()
            .min_by_key(|t| t.live.load(Ordering::Relaxed))
            .expect("at least one io thread");
        least.live.fetch_add(1, Ordering::Relaxed);
        let live = Live(least.live.clone());
        tasks.spawn_on(
            async move {
                let _live = live;
                task.await
            },
            &least.handle,
        );
    }
}

impl Drop for IoThreads {
    fn drop(&mut self) {
        for t in &mut self.threads {
            if let Some(stop) = t.stop.take() {
                let _ = stop.send(());
            }
        }
        for t in &mut self.threads {
            if let Some(thread) = t.thread.take() {
                let _ = thread.join();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;
    use std::sync::Mutex;

    #[test]
    fn connections_go_to_the_least_loaded_thread_and_stay_there() {
        let io = IoThreads::start(2).unwrap();
        let seen: Arc<Mutex<Vec<String>>> = Arc::default();
        let (release, released) = tokio::sync::watch::channel(false);
        let mut tasks = JoinSet::new();
        for _ in 0..6 {
            let (seen, mut released) = (seen.clone(), released.clone());
            io.spawn(&mut tasks, async move {
                let name = || std::thread::current().name().unwrap_or("?").to_string();
                let before = name();
                // Held open, as a connection is, so later spawns see this one as live.
                let _ = released.wait_for(|r| *r).await;
                assert_eq!(name(), before, "a task moved threads");
                seen.lock().unwrap().push(before);
            });
        }
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        runtime.block_on(async {
            release.send(true).unwrap();
            while let Some(r) = tasks.join_next().await {
                r.unwrap();
            }
        });
        let mut per_thread: HashMap<String, usize> = HashMap::new();
        for name in seen.lock().unwrap().iter() {
            *per_thread.entry(name.clone()).or_default() += 1;
        }
        let expected: HashMap<String, usize> =
            [("hotkv-io-0".to_string(), 3), ("hotkv-io-1".to_string(), 3)].into();
        assert_eq!(per_thread, expected);
        // Every task has ended, so no thread counts a live connection.
        assert!(io
            .threads
            .iter()
            .all(|t| t.live.load(Ordering::Relaxed) == 0));
    }
}
