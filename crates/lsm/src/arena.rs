//! Memory for a memtable's keys and versions: carved from large blocks one after
//! another and freed all at once when the memtable drops. A memtable frees nothing
//! before then anyway, and per-allocation frees of a million keys were a visible part
//! of a flush's cost; carving also keeps a key's node and its bytes in one allocation.

use std::alloc::{self, Layout};
use std::ptr::NonNull;

/// Every allocation's alignment: enough for the u64s and pointers the memtable keeps.
pub const ALIGN: usize = 8;
/// The size of the blocks small allocations are carved from.
const BLOCK_SIZE: usize = 64 << 10;
/// Allocations above this get a block of their own, so that starting a new block never
/// wastes more than a quarter of the old one.
const SEPARATE_ABOVE: usize = BLOCK_SIZE / 4;

pub struct Arena {
    /// Every block, to free on drop.
    blocks: Vec<(NonNull<u8>, Layout)>,
    /// The unused rest of the current block.
    next: *mut u8,
    remaining: usize,
    /// Bytes handed out (padded to ALIGN). The blocks hold a little more: each
    /// block's tail too short for the allocation that came next, under a quarter.
    used: usize,
}

// SAFETY: the arena owns its blocks alone (nothing else frees them, and the raw
// pointers are not shared through it), so moving it to another thread moves that
// ownership; the memory it hands out is published by its user with its own ordering.
unsafe impl Send for Arena {}

impl Arena {
    pub fn new() -> Arena {
        Arena {
            blocks: Vec::new(),
            next: std::ptr::null_mut(),
            remaining: 0,
            used: 0,
        }
    }

    /// `size` bytes aligned to [`ALIGN`], uninitialised, valid until the arena drops.
    pub fn allocate(&mut self, size: usize) -> NonNull<u8> {
        let size = size.max(1).next_multiple_of(ALIGN);
        self.used += size;
        if size > self.remaining {
            if size > SEPARATE_ABOVE {
                return self.new_block(size);
            }
            self.next = self.new_block(BLOCK_SIZE).as_ptr();
            self.remaining = BLOCK_SIZE;
        }
        let at = self.next;
        // SAFETY: `size <= remaining`, so `at + size` is within the current block or
        // one past its end.
        self.next = unsafe { at.add(size) };
        self.remaining -= size;
        // SAFETY: `at` came from a successful allocation, offset within it.
        unsafe { NonNull::new_unchecked(at) }
    }

    /// Bytes handed out so far.
    pub fn used(&self) -> usize {
        self.used
    }

    fn new_block(&mut self, size: usize) -> NonNull<u8> {
        let layout = Layout::from_size_align(size, ALIGN).expect("an arena block's layout");
        // SAFETY: `size` is at least ALIGN, so the layout is not zero-sized.
        let block = unsafe { alloc::alloc(layout) };
        let Some(block) = NonNull::new(block) else {
            alloc::handle_alloc_error(layout)
        };
        self.blocks.push((block, layout));
        block
    }
}

impl Drop for Arena {
    fn drop(&mut self) {
        for &(block, layout) in &self.blocks {
            // SAFETY: each block was allocated with this layout and is freed once, here;
            // whoever borrowed memory from the arena borrowed the arena as long.
            unsafe { alloc::dealloc(block.as_ptr(), layout) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allocations_are_aligned_disjoint_and_keep_their_bytes() {
        let mut arena = Arena::new();
        let sizes = [1, 7, 8, 9, 100, SEPARATE_ABOVE + 1, 3, BLOCK_SIZE, 40, 0];
        let mut taken = Vec::new();
        for (i, &size) in sizes
            .iter()
            .cycle()
            .take(if cfg!(miri) { 30 } else { 3000 })
            .enumerate()
        {
            let at = arena.allocate(size);
            assert_eq!(at.as_ptr() as usize % ALIGN, 0);
            // SAFETY: `size` bytes at `at` are this allocation's alone.
            unsafe { std::ptr::write_bytes(at.as_ptr(), i as u8, size) };
            taken.push((at, size, i as u8));
        }
        for &(at, size, fill) in &taken {
            // SAFETY: written above and not freed: the arena lives.
            let bytes = unsafe { std::slice::from_raw_parts(at.as_ptr(), size) };
            assert!(
                bytes.iter().all(|&b| b == fill),
                "allocation {fill} overwritten"
            );
        }
        let padded: usize = taken
            .iter()
            .map(|&(_, size, _)| size.max(1).next_multiple_of(ALIGN))
            .sum();
        assert_eq!(arena.used(), padded);
    }
}
