//! Metadata calls under a guest root, for the ptrace mechanisms: run by the guest kernel itself
//! on a descriptor, not by the host on a rewritten path.
//!
//! Rewriting a path is check-then-use: the guest kernel resolves the guest's path to a host path
//! inside the root, and the host resolves that string again when the call runs, so a guest that
//! swaps a directory on the way for a symbolic link in between can make the call act outside
//! the root. Landlock stops that for opening, creating, removing and renaming, but not for stat,
//! access, chmod, chown, utimes, statfs, readlink and the xattr calls. For those the guest kernel
//! opens the target itself with openat2(RESOLVE_IN_ROOT) beneath the root (the host keeps every
//! step, `..` and symbolic links included, inside it, however the tree changes meanwhile), or
//! for the `AT_EMPTY_PATH` forms takes the guest's descriptor (pidfd_getfd) and checks where it
//! points; then it runs the call on that descriptor with `AT_EMPTY_PATH` (or, for the xattr
//! calls, on `/proc/self/fd/N`), copying the guest's input from its memory and the results into
//! it. The guest's call is answered with the result and never runs on the host.

use super::mem;
use libc as c;
use std::ffi::CString;
use std::os::fd::{AsRawFd, OwnedFd};

/// The largest xattr value or list (XATTR_SIZE_MAX) and name (XATTR_NAME_MAX).
const XATTR_SIZE_MAX: u64 = 65536;
const XATTR_NAME_MAX: usize = 255;

fn neg(errno: i32) -> i64 {
    -(errno as i64)
}

/// A system call's result: the value, or -errno.
fn ret(r: i64) -> i64 {
    if r < 0 {
        neg(mem::errno())
    } else {
        r
    }
}

/// Runs metadata call `nr` with arguments `a` of guest thread `tid` on `fd`, the object its
/// path named; the result the guest gets.
pub(crate) fn run(tid: i32, nr: i64, a: [u64; 6], fd: &OwnedFd) -> i64 {
    let fd = fd.as_raw_fd();
    let empty = c"".as_ptr();
    let at_empty = c::AT_EMPTY_PATH as u64;
    // SAFETY (every call below): system calls on `fd`, the empty C string and local buffers of
    // the sizes passed.
    match nr {
        c::SYS_stat | c::SYS_lstat | c::SYS_newfstatat => {
            let buf = if nr == c::SYS_newfstatat { a[2] } else { a[1] };
            // SAFETY: all-zero is a valid stat, written by the call.
            let mut st: c::stat = unsafe { std::mem::zeroed() };
            let r = unsafe { c::fstatat(fd, empty, &mut st, c::AT_EMPTY_PATH) };
            if r < 0 {
                return neg(mem::errno());
            }
            out(tid, buf, as_bytes(&st), 0)
        }
        c::SYS_statx => {
            // AT_STATX_SYNC_TYPE and AT_NO_AUTOMOUNT keep their meaning; the link rule was the
            // open's.
            let flags = (a[2] & !(c::AT_SYMLINK_NOFOLLOW as u64)) | at_empty;
            let mut buf = [0u8; 256];
            let r = unsafe { c::syscall(c::SYS_statx, fd, empty, flags, a[3], buf.as_mut_ptr()) };
            if r < 0 {
                return neg(mem::errno());
            }
            out(tid, a[4], &buf, 0)
        }
        c::SYS_access | c::SYS_faccessat | c::SYS_faccessat2 => {
            let mode = if nr == c::SYS_access { a[1] } else { a[2] };
            let flags = if nr == c::SYS_faccessat2 { a[3] & c::AT_EACCESS as u64 } else { 0 };
            ret(unsafe { c::syscall(c::SYS_faccessat2, fd, empty, mode, flags | at_empty) })
        }
        c::SYS_chmod | c::SYS_fchmodat | c::SYS_fchmodat2 => {
            let mode = if nr == c::SYS_chmod { a[1] } else { a[2] };
            let flags = if nr == c::SYS_fchmodat2 { a[3] & c::AT_SYMLINK_NOFOLLOW as u64 } else { 0 };
            let r = unsafe { c::syscall(c::SYS_fchmodat2, fd, empty, mode, flags | at_empty) };
            if r < 0 && mem::errno() == c::ENOSYS && flags == 0 {
                // Before Linux 6.6: the magic link leads to the same object.
                let Ok(path) = CString::new(format!("/proc/self/fd/{fd}")) else {
                    return neg(c::EINVAL);
                };
                return ret(unsafe { c::chmod(path.as_ptr(), mode as c::mode_t) } as i64);
            }
            ret(r)
        }
        c::SYS_chown | c::SYS_lchown | c::SYS_fchownat => {
            let (uid, gid) = if nr == c::SYS_fchownat { (a[2], a[3]) } else { (a[1], a[2]) };
            ret(unsafe { c::syscall(c::SYS_fchownat, fd, empty, uid, gid, at_empty) })
        }
        c::SYS_utime | c::SYS_utimes | c::SYS_futimesat | c::SYS_utimensat => {
            let times = match times(tid, nr, a) {
                Ok(t) => t,
                Err(e) => return neg(e),
            };
            let ptr = times.as_ref().map_or(std::ptr::null(), |t| t.as_ptr());
            ret(unsafe { c::syscall(c::SYS_utimensat, fd, empty, ptr, at_empty) })
        }
        c::SYS_statfs => {
            // SAFETY: all-zero is a valid statfs, written by the call.
            let mut st: c::statfs = unsafe { std::mem::zeroed() };
            if unsafe { c::fstatfs(fd, &mut st) } < 0 {
                return neg(mem::errno());
            }
            out(tid, a[1], as_bytes(&st), 0)
        }
        c::SYS_readlink | c::SYS_readlinkat => {
            let (buf, size) = if nr == c::SYS_readlink { (a[1], a[2]) } else { (a[2], a[3]) };
            if size as i32 <= 0 {
                return neg(c::EINVAL);
            }
            let mut local = vec![0u8; (size as usize).min(c::PATH_MAX as usize)];
            let n = unsafe { c::readlinkat(fd, empty, local.as_mut_ptr().cast(), local.len()) };
            if n < 0 {
                return neg(mem::errno());
            }
            out(tid, buf, &local[..n as usize], n as i64)
        }
        _ => xattr(tid, nr, a, fd),
    }
}

/// The xattr calls, on `/proc/self/fd/FD` (getxattr and the like take no descriptor opened
/// with O_PATH; the magic link leads to exactly the opened object, a symbolic link itself
/// when the open did not follow it).
fn xattr(tid: i32, nr: i64, a: [u64; 6], fd: i32) -> i64 {
    let Ok(path) = CString::new(format!("/proc/self/fd/{fd}")) else {
        return neg(c::EINVAL);
    };
    let name = |at: u64| -> Result<CString, i32> {
        let n =
            mem::read_cstr(tid, at, XATTR_NAME_MAX + 1)
                .map_err(|e| if e == c::ENAMETOOLONG { c::ERANGE } else { e })?;
        CString::new(n).map_err(|_| c::EINVAL)
    };
    let size = |s: u64| (s as usize).min(XATTR_SIZE_MAX as usize);
    // SAFETY (every call below): C strings and local buffers of the sizes passed.
    match nr {
        c::SYS_getxattr | c::SYS_lgetxattr => {
            let n = match name(a[1]) {
                Ok(n) => n,
                Err(e) => return neg(e),
            };
            let mut buf = vec![0u8; size(a[3])];
            let ptr = if buf.is_empty() { std::ptr::null_mut() } else { buf.as_mut_ptr() };
            let r = unsafe { c::getxattr(path.as_ptr(), n.as_ptr(), ptr.cast(), buf.len()) };
            if r < 0 {
                return neg(mem::errno());
            }
            if buf.is_empty() {
                return r as i64;
            }
            out(tid, a[2], &buf[..r as usize], r as i64)
        }
        c::SYS_setxattr | c::SYS_lsetxattr => {
            let n = match name(a[1]) {
                Ok(n) => n,
                Err(e) => return neg(e),
            };
            if a[3] > XATTR_SIZE_MAX {
                return neg(c::E2BIG);
            }
            let value = match mem::read(tid, a[2], a[3] as usize) {
                Ok(v) => v,
                Err(e) => return neg(e),
            };
            ret(unsafe { c::setxattr(path.as_ptr(), n.as_ptr(), value.as_ptr().cast(), value.len(), a[4] as i32) }
                as i64)
        }
        c::SYS_listxattr | c::SYS_llistxattr => {
            let mut buf = vec![0u8; size(a[2])];
            let ptr = if buf.is_empty() { std::ptr::null_mut() } else { buf.as_mut_ptr() };
            let r = unsafe { c::listxattr(path.as_ptr(), ptr.cast(), buf.len()) };
            if r < 0 {
                return neg(mem::errno());
            }
            if buf.is_empty() {
                return r as i64;
            }
            out(tid, a[1], &buf[..r as usize], r as i64)
        }
        c::SYS_removexattr | c::SYS_lremovexattr => {
            let n = match name(a[1]) {
                Ok(n) => n,
                Err(e) => return neg(e),
            };
            ret(unsafe { c::removexattr(path.as_ptr(), n.as_ptr()) } as i64)
        }
        _ => neg(c::ENOSYS),
    }
}

/// The times argument of a utime-family call as utimensat's two timespecs (None: now).
fn times(tid: i32, nr: i64, a: [u64; 6]) -> Result<Option<[c::timespec; 2]>, i32> {
    let ptr = match nr {
        c::SYS_utime | c::SYS_utimes => a[1],
        _ => a[2],
    };
    if ptr == 0 {
        return Ok(None);
    }
    let words = |n: usize| -> Result<Vec<i64>, i32> {
        let b = mem::read(tid, ptr, 8 * n)?;
        Ok(b.chunks(8).map(|w| i64::from_ne_bytes(w.try_into().unwrap_or([0; 8]))).collect())
    };
    let ts = |s: i64, ns: i64| c::timespec { tv_sec: s, tv_nsec: ns };
    Ok(Some(match nr {
        // struct utimbuf: actime, modtime (seconds).
        c::SYS_utime => {
            let w = words(2)?;
            [ts(w[0], 0), ts(w[1], 0)]
        }
        // struct timeval[2].
        c::SYS_utimes | c::SYS_futimesat => {
            let w = words(4)?;
            if [w[1], w[3]].iter().any(|&us| !(0..1_000_000).contains(&us)) {
                return Err(c::EINVAL);
            }
            [ts(w[0], w[1] * 1000), ts(w[2], w[3] * 1000)]
        }
        // struct timespec[2], UTIME_NOW and UTIME_OMIT included.
        _ => {
            let w = words(4)?;
            [ts(w[0], w[1]), ts(w[2], w[3])]
        }
    }))
}

/// Writes `data` to the guest at `at`; `ok` if that worked, -EFAULT if not.
fn out(tid: i32, at: u64, data: &[u8], ok: i64) -> i64 {
    match mem::write(tid, at, data) {
        Ok(()) => ok,
        Err(_) => neg(c::EFAULT),
    }
}

/// The bytes of a plain C struct.
fn as_bytes<T>(v: &T) -> &[u8] {
    // SAFETY: `v` is a live, fully initialised repr(C) value from libc (stat, statfs), viewed
    // as its own size in bytes.
    unsafe { std::slice::from_raw_parts((v as *const T).cast::<u8>(), std::mem::size_of::<T>()) }
}
