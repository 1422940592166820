//! Storage on transparent huge pages for the simulator's own large, randomly read arrays.
//!
//! A random-access workload makes the simulator read its table-page arena and its LLC tag
//! array at random, megabytes of each. On 4 KiB host pages nearly every such read also
//! misses the host's TLB; on 2 MiB pages the host's TLB covers them. [`FixedVec`] places
//! its storage on a 2 MiB boundary and (on Linux) asks the kernel for huge pages with
//! `madvise(MADV_HUGEPAGE)` before anything is written, so the first touch of each 2 MiB
//! region faults in a huge page. This is a host-side hint only: it changes no simulated
//! state and no result, and where the kernel declines, the memory is simply 4 KiB pages.

use std::alloc::{self, Layout};
use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;

/// Size (and alignment) of a host huge page.
pub const HUGE_PAGE: usize = 2 << 20;

/// Ask the kernel to back `[ptr, ptr + len)` with transparent huge pages; a hint, failures
/// are ignored (the memory stays usable on small pages).
fn advise_huge_pages(ptr: *mut u8, len: usize) {
    #[cfg(target_os = "linux")]
    // SAFETY: madvise with MADV_HUGEPAGE only sets a flag on the mappings covering the range
    // (the caller's own allocation); it neither frees nor changes their contents.
    unsafe {
        libc::madvise(ptr.cast(), len, libc::MADV_HUGEPAGE);
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (ptr, len);
}

/// A vector of `Copy` values with a capacity fixed at creation: it never reallocates, so
/// its storage can be placed for the host. Storage of at least [`HUGE_PAGE`] bytes is
/// 2 MiB-aligned and advised to huge pages before its first write.
pub struct FixedVec<T: Copy> {
    ptr: NonNull<T>,
    len: usize,
    capacity: usize,
}

// SAFETY: a `FixedVec` owns its elements as a `Vec` does; no other handle to them exists.
unsafe impl<T: Copy + Send> Send for FixedVec<T> {}
// SAFETY: shared access only hands out `&T` (through `Deref`), as a `Vec` does.
unsafe impl<T: Copy + Sync> Sync for FixedVec<T> {}

impl<T: Copy> FixedVec<T> {
    /// An empty vector with room for `capacity` values.
    pub fn with_capacity(capacity: usize) -> Self {
        let layout = Self::layout(capacity);
        let ptr = if layout.size() == 0 {
            NonNull::dangling()
        } else {
            // SAFETY: the layout has a non-zero size.
            let raw = unsafe { alloc::alloc(layout) };
            let ptr =
                NonNull::new(raw.cast::<T>()).unwrap_or_else(|| alloc::handle_alloc_error(layout));
            if layout.size() >= HUGE_PAGE {
                advise_huge_pages(raw, layout.size());
            }
            ptr
        };
        FixedVec {
            ptr,
            len: 0,
            capacity,
        }
    }

    /// `len` copies of `value`.
    pub fn filled(len: usize, value: T) -> Self {
        let mut v = Self::with_capacity(len);
        for _ in 0..len {
            v.push(value);
        }
        v
    }

    fn layout(capacity: usize) -> Layout {
        let size = std::mem::size_of::<T>()
            .checked_mul(capacity)
            .expect("FixedVec capacity overflow");
        let align = if size >= HUGE_PAGE {
            HUGE_PAGE
        } else {
            std::mem::align_of::<T>()
        };
        Layout::from_size_align(size, align).expect("FixedVec layout")
    }

    pub fn capacity(&self) -> usize {
        self.capacity
    }

    pub fn is_full(&self) -> bool {
        self.len == self.capacity
    }

    /// Append `value`; panics when full.
    pub fn push(&mut self, value: T) {
        assert!(
            self.len < self.capacity,
            "FixedVec of capacity {} is full",
            self.capacity
        );
        // SAFETY: `len < capacity`, so the slot lies inside the allocation (or `T` is
        // zero-sized and the write is a no-op at a dangling, aligned pointer).
        unsafe { self.ptr.as_ptr().add(self.len).write(value) };
        self.len += 1;
    }
}

impl<T: Copy> FixedVec<T> {
    /// Append all of `values`; panics if they do not fit.
    pub fn extend_from_slice(&mut self, values: &[T]) {
        assert!(
            values.len() <= self.capacity - self.len,
            "FixedVec of capacity {} is full",
            self.capacity
        );
        // SAFETY: the checked room puts `len .. len + values.len()` inside the allocation;
        // `values` cannot overlap it, as `&mut self` owns those uninitialized slots.
        unsafe {
            std::ptr::copy_nonoverlapping(
                values.as_ptr(),
                self.ptr.as_ptr().add(self.len),
                values.len(),
            )
        };
        self.len += values.len();
    }
}

impl<T: Copy> Deref for FixedVec<T> {
    type Target = [T];
    #[inline]
    fn deref(&self) -> &[T] {
        // SAFETY: the first `len` slots are initialized and owned by `self`.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl<T: Copy> DerefMut for FixedVec<T> {
    #[inline]
    fn deref_mut(&mut self) -> &mut [T] {
        // SAFETY: as in `deref`, and `&mut self` makes the access exclusive.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl<T: Copy> Drop for FixedVec<T> {
    fn drop(&mut self) {
        let layout = Self::layout(self.capacity);
        if layout.size() != 0 {
            // SAFETY: allocated in `with_capacity` with this same layout; `T: Copy` has no
            // destructor to run.
            unsafe { alloc::dealloc(self.ptr.as_ptr().cast(), layout) };
        }
    }
}

impl<T: Copy> Clone for FixedVec<T> {
    fn clone(&self) -> Self {
        let mut v = Self::with_capacity(self.capacity);
        for &x in self.iter() {
            v.push(x);
        }
        v
    }
}

impl<T: Copy + std::fmt::Debug> std::fmt::Debug for FixedVec<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pushes_index_and_clones() {
        let mut v = FixedVec::with_capacity(3);
        v.push(1u64);
        v.push(2);
        assert_eq!(&v[..], &[1, 2]);
        v[0] = 7;
        let w = v.clone();
        v.push(3);
        assert!(v.is_full());
        assert_eq!((&v[..], &w[..]), (&[7, 2, 3][..], &[7, 2][..]));
        let mut x = FixedVec::with_capacity(5);
        x.extend_from_slice(&w);
        x.extend_from_slice(&v);
        assert_eq!(&x[..], &[7, 2, 7, 2, 3]);
    }

    #[test]
    fn large_storage_is_huge_page_aligned() {
        let v = FixedVec::filled(HUGE_PAGE / 8, 5u64);
        assert_eq!(v.as_ptr() as usize % HUGE_PAGE, 0);
        assert!(v.iter().all(|&x| x == 5));
        let empty: FixedVec<u64> = FixedVec::with_capacity(0);
        assert!(empty.is_empty() && empty.is_full());
    }
}
