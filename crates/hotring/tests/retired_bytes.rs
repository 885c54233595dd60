//! A thread that deleted large values and went quiet holds none of them back: the
//! epoch collector frees only what reached its global queue, and a thread's own bag
//! of deferred frees reaches it when full (64 items) unless the index hands it over
//! sooner. Its own test binary: the count of allocated items is process-wide.

use std::sync::mpsc;

use hotring::HotRing;

#[test]
fn large_values_deleted_by_a_quiet_thread_are_freed() {
    let index = HotRing::new();
    let before = hotring::allocated_items();
    let (deleted_tx, deleted_rx) = mpsc::channel();
    let (done_tx, done_rx) = mpsc::channel::<()>();
    std::thread::scope(|s| {
        let index = &index;
        s.spawn(move || {
            // Fewer than a bag holds, each far larger than the index lets a thread keep.
            for k in 0..20u32 {
                assert!(index.insert(&k.to_le_bytes(), &vec![k as u8; 100_000]));
            }
            for k in 0..20u32 {
                assert!(index.remove(&k.to_le_bytes()));
            }
            deleted_tx.send(()).unwrap();
            // Alive and unpinned: its bag is never filled nor flushed by itself.
            done_rx.recv().unwrap();
        });
        deleted_rx.recv().unwrap();
        // Another thread drives the collector, as the server's cron does.
        let mut freed = false;
        for _ in 0..1_000 {
            crossbeam_epoch::pin().flush();
            if hotring::allocated_items() <= before {
                freed = true;
                break;
            }
            std::thread::yield_now();
        }
        done_tx.send(()).unwrap();
        assert!(
            freed,
            "{} items still allocated, {before} before the inserts",
            hotring::allocated_items()
        );
    });
}
