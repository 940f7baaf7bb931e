//! Software prefetch: asking the CPU to start loading memory that will be read soon,
//! where its own prefetcher does not see it coming (the next page of a scan, which
//! lies anywhere in memory).

/// Asks for the cache lines of the `len` bytes at `start` to be loaded. `start` need
/// not point to live memory.
#[inline]
pub(crate) fn prefetch_lines(start: *const u8, len: usize) {
    #[cfg(target_arch = "x86_64")]
    for line in (0..len).step_by(64) {
        // SAFETY: a prefetch is only a hint: it never faults and has no effect on the
        // program's memory, even if the memory has been freed since `start` was read
        // (the buffer pool prefetches frames it no longer holds a lock on).
        unsafe {
            std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(start.wrapping_add(line).cast());
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (start, len);
}
