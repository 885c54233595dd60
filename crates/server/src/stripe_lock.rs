//! The lock of one stripe of `EngineStore`'s keys: a raw mutex (no guard), because a
//! thread's gathered writes keep stripes locked past the write that took them and
//! unlock them later (`gathered_writes.rs`).
//!
//! Under the `shuttle` feature it is built on shuttle's mutex and condition variable,
//! so that the model in `engine_store_model.rs` can explore the interleavings of the gathering
//! protocol and report a deadlock if two threads ever wait for each other.

#[cfg(not(feature = "shuttle"))]
pub use parking_lot_stripe::StripeLock;
#[cfg(feature = "shuttle")]
pub use shuttle_stripe::StripeLock;

#[cfg(not(feature = "shuttle"))]
mod parking_lot_stripe {
    use parking_lot::lock_api::RawMutex as _;
    use parking_lot::RawMutex;

    pub struct StripeLock(RawMutex);

    impl StripeLock {
        pub fn new() -> StripeLock {
            StripeLock(RawMutex::INIT)
        }

        pub fn lock(&self) {
            self.0.lock();
        }

        pub fn try_lock(&self) -> bool {
            self.0.try_lock()
        }

        /// # Safety
        /// The calling thread holds the lock (`lock` or a `try_lock` that returned
        /// true), and unlocks it once.
        pub unsafe fn unlock(&self) {
            // SAFETY: the caller holds the lock, as this function's contract says.
            unsafe { self.0.unlock() }
        }
    }
}

#[cfg(feature = "shuttle")]
mod shuttle_stripe {
    use shuttle::sync::{Condvar, Mutex};

    pub struct StripeLock {
        locked: Mutex<bool>,
        unlocked: Condvar,
    }

    impl StripeLock {
        pub fn new() -> StripeLock {
            StripeLock {
                locked: Mutex::new(false),
                unlocked: Condvar::new(),
            }
        }

        pub fn lock(&self) {
            let mut locked = self.locked.lock().unwrap();
            while *locked {
                locked = self.unlocked.wait(locked).unwrap();
            }
            *locked = true;
        }

        pub fn try_lock(&self) -> bool {
            let mut locked = self.locked.lock().unwrap();
            !std::mem::replace(&mut *locked, true)
        }

        /// # Safety
        /// As the other build's: the calling thread holds the lock. Nothing here is
        /// unsafe, but the model must hold callers to the same contract.
        pub unsafe fn unlock(&self) {
            let mut locked = self.locked.lock().unwrap();
            assert!(*locked, "a stripe unlocked that no one held");
            *locked = false;
            self.unlocked.notify_one();
        }
    }
}
