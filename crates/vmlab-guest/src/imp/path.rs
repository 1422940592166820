//! The guest root: resolving a guest's path, one component at a time, to a host path inside
//! the root. `..` stops at the root, absolute symbolic links restart at the root, directory
//! descriptors and the current directory must lie inside it, and `/proc/PID` names guest pids.

use super::mem::errno;
use libc as c;
use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// Symbolic links followed in one resolution before ELOOP, as Linux.
const MAX_LINKS: u32 = 40;

/// A guest root directory other than `/`.
pub(crate) struct Root {
    /// Its canonical host path, without a trailing slash.
    pub host: Vec<u8>,
    fd: OwnedFd,
    /// Whether the root's `proc` is a procfs mount (then `/proc/PID` names guest pids).
    proc_is_procfs: bool,
}

/// Where a relative path starts.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Base {
    /// The thread's current directory.
    Cwd,
    /// One of the thread's descriptors.
    Fd(i32),
}

/// What resolution needs of the guest kernel: the thread, and its pid translation for /proc.
pub(crate) struct Who<'a> {
    pub tid: i32,
    pub tgid: i32,
    /// Guest pid to host pid, for `/proc/PID`.
    pub host_pid: &'a dyn Fn(i32) -> Option<i32>,
}

impl Root {
    /// Opens `dir` as a guest root.
    pub fn open(dir: &Path) -> Result<Root, String> {
        let canon = std::fs::canonicalize(dir).map_err(|e| format!("guest root {}: {e}", dir.display()))?;
        if !canon.is_dir() {
            return Err(format!("guest root {} is not a directory", dir.display()));
        }
        let cpath = CString::new(canon.as_os_str().as_bytes()).map_err(|_| "guest root has a NUL byte".to_string())?;
        // SAFETY: `cpath` is a valid C string; the result is checked.
        let fd = unsafe { c::open(cpath.as_ptr(), c::O_PATH | c::O_DIRECTORY | c::O_CLOEXEC) };
        if fd < 0 {
            return Err(format!("guest root {}: {}", dir.display(), std::io::Error::last_os_error()));
        }
        // SAFETY: `fd` was just opened and is owned by nobody else.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        let proc_is_procfs = is_procfs(&canon.join("proc"));
        Ok(Root { host: canon.as_os_str().as_bytes().to_vec(), fd, proc_is_procfs })
    }

    /// Opens (O_PATH) host path `host`, which the guest kernel resolved inside the root, with
    /// openat2(RESOLVE_IN_ROOT) beneath the root: whatever changed on the way since, the host
    /// keeps every step inside the root. `follow`: a symbolic link last is followed.
    pub fn open_in_root(&self, host: &[u8], follow: bool) -> Result<OwnedFd, i32> {
        let guest = self.guest_path(host).ok_or(c::EACCES)?;
        let p = CString::new(guest).map_err(|_| c::EINVAL)?;
        let nofollow = if follow { 0 } else { c::O_NOFOLLOW };
        // SAFETY: all-zero is a valid open_how (no flags, no mode, no resolve rules).
        let mut how: c::open_how = unsafe { std::mem::zeroed() };
        how.flags = (c::O_PATH | c::O_CLOEXEC | nofollow) as u64;
        how.resolve = c::RESOLVE_IN_ROOT | c::RESOLVE_NO_MAGICLINKS;
        // SAFETY: `p` is a C string and `how` a live open_how of the size passed.
        let fd = unsafe {
            c::syscall(c::SYS_openat2, self.fd.as_raw_fd(), p.as_ptr(), &how, std::mem::size_of::<c::open_how>())
        } as i32;
        if fd < 0 {
            return Err(errno());
        }
        // SAFETY: a new descriptor, owned here.
        Ok(unsafe { OwnedFd::from_raw_fd(fd) })
    }

    /// Whether host path `host` is in the root's procfs, whose magic links openat2 beneath the
    /// root does not follow.
    pub fn in_procfs(&self, host: &[u8]) -> bool {
        self.proc_is_procfs && self.guest_path(host).is_some_and(|g| g == b"/proc" || g.starts_with(b"/proc/"))
    }

    /// Whether the guest kernel's own descriptor `fd` (taken from a guest) is an object inside
    /// the root, or no file-system object at all (a pipe, a socket): EACCES if not.
    pub fn check_fd(&self, fd: &OwnedFd) -> Result<(), i32> {
        let link = std::fs::read_link(format!("/proc/self/fd/{}", fd.as_raw_fd())).map_err(|_| c::EBADF)?;
        let link = link.as_os_str().as_bytes();
        if !link.starts_with(b"/") || self.guest_path(link).is_some() {
            Ok(())
        } else {
            Err(c::EACCES)
        }
    }

    /// The guest path of a host path, if the host path lies inside the root.
    pub fn guest_path<'p>(&self, host: &'p [u8]) -> Option<&'p [u8]> {
        let rest = host.strip_prefix(self.host.as_slice())?;
        if rest.is_empty() {
            return Some(b"/");
        }
        rest.starts_with(b"/").then_some(rest)
    }

    /// The guest path components of where `base` points for thread `tid`.
    fn base_components(&self, tid: i32, base: Base) -> Result<Vec<Vec<u8>>, i32> {
        let link = match base {
            Base::Cwd => format!("/proc/{tid}/cwd"),
            Base::Fd(fd) => format!("/proc/{tid}/fd/{fd}"),
        };
        let target = std::fs::read_link(&link).map_err(|e| match (base, e.raw_os_error()) {
            (Base::Fd(_), Some(c::ENOENT)) => c::EBADF,
            (_, Some(n)) => n,
            _ => c::EIO,
        })?;
        let target = target.as_os_str().as_bytes();
        if !target.starts_with(b"/") {
            return Err(c::ENOTDIR);
        }
        let guest = self.guest_path(target).ok_or(c::EACCES)?;
        Ok(split(guest).map(<[u8]>::to_vec).collect())
    }

    /// Resolves `path` (relative to `base` unless absolute) for thread `who` to a host path
    /// inside the root. `follow` says whether a symbolic link in the last component is
    /// followed. A missing last component resolves (for calls that create it); a missing
    /// directory on the way is ENOENT. Escapes through a descriptor or /proc are EACCES.
    pub fn resolve(&self, who: &Who, base: Base, path: &[u8], follow: bool) -> Result<Vec<u8>, i32> {
        if path.is_empty() {
            return Err(c::ENOENT);
        }
        let mut cur: Vec<Vec<u8>> =
            if path.starts_with(b"/") { Vec::new() } else { self.base_components(who.tid, base)? };
        let follow = follow || path.ends_with(b"/");
        let mut todo: Vec<Vec<u8>> = split(path).rev().map(<[u8]>::to_vec).collect();
        let mut links = 0;
        while let Some(comp) = todo.pop() {
            let last = todo.is_empty();
            if comp == b"." {
                continue;
            }
            if comp == b".." {
                cur.pop();
                continue;
            }
            let comp = self.proc_name(who, &cur, comp)?;
            cur.push(comp);
            let rel = join(&cur);
            let st = match self.lstat(&rel) {
                Ok(st) => st,
                Err(c::ENOENT) if last => break,
                Err(e) => return Err(e),
            };
            if st.st_mode & c::S_IFMT != c::S_IFLNK || (last && !follow) {
                continue;
            }
            links += 1;
            if links > MAX_LINKS {
                return Err(c::ELOOP);
            }
            let target = self.readlink(&rel)?;
            let in_proc = self.proc_is_procfs && cur.first().is_some_and(|f| f == b"proc");
            cur.pop();
            if in_proc {
                // A /proc link: "/..." is a host path (magic links such as cwd, exe, root,
                // fd/N), which must lie inside the root; "pipe:[...]" and the like name an
                // object, not a path: the host kernel follows the link itself.
                if target.starts_with(b"/") {
                    let guest = self.guest_path(&target).ok_or(c::EACCES)?;
                    cur.clear();
                    todo.extend(split(guest).rev().map(<[u8]>::to_vec));
                    continue;
                }
                if target.contains(&b':') {
                    if !last {
                        return Err(c::ENOTDIR);
                    }
                    cur.push(rel.rsplit(|&b| b == b'/').next().unwrap_or_default().to_vec());
                    break;
                }
            }
            if target.starts_with(b"/") {
                cur.clear();
            }
            todo.extend(split(&target).rev().map(<[u8]>::to_vec));
        }
        let mut host = self.host.clone();
        for comp in &cur {
            host.push(b'/');
            host.extend_from_slice(comp);
        }
        Ok(host)
    }

    /// Under the root's procfs, a guest pid (or `self`, `thread-self`) in `/proc/N` or
    /// `/proc/N/task/M` becomes the host pid; a pid outside the guest does not exist.
    fn proc_name(&self, who: &Who, cur: &[Vec<u8>], comp: Vec<u8>) -> Result<Vec<u8>, i32> {
        if !self.proc_is_procfs || cur.first().is_none_or(|f| f != b"proc") {
            return Ok(comp);
        }
        let pid_level = cur.len() == 1 || (cur.len() == 3 && cur[2] == b"task");
        if !pid_level {
            return Ok(comp);
        }
        if cur.len() == 1 && comp == b"self" {
            return Ok(who.tgid.to_string().into_bytes());
        }
        if cur.len() == 1 && comp == b"thread-self" {
            return Err(c::ENOENT);
        }
        match std::str::from_utf8(&comp).ok().and_then(|s| s.parse::<i32>().ok()) {
            Some(guest) => (who.host_pid)(guest).map(|h| h.to_string().into_bytes()).ok_or(c::ENOENT),
            None => Ok(comp),
        }
    }

    fn lstat(&self, rel: &[u8]) -> Result<c::stat, i32> {
        let p = CString::new(rel).map_err(|_| c::EINVAL)?;
        // SAFETY: an all-zero `stat` is a valid value to be overwritten.
        let mut st: c::stat = unsafe { std::mem::zeroed() };
        // SAFETY: `p` is a valid C string and `st` a valid out-pointer for the call.
        let r = unsafe { c::fstatat(self.fd.as_raw_fd(), p.as_ptr(), &mut st, c::AT_SYMLINK_NOFOLLOW) };
        if r < 0 {
            return Err(errno());
        }
        Ok(st)
    }

    fn readlink(&self, rel: &[u8]) -> Result<Vec<u8>, i32> {
        let p = CString::new(rel).map_err(|_| c::EINVAL)?;
        let mut buf = vec![0u8; 4096];
        // SAFETY: `p` is a valid C string and `buf` has `buf.len()` writable bytes.
        let n = unsafe { c::readlinkat(self.fd.as_raw_fd(), p.as_ptr(), buf.as_mut_ptr().cast(), buf.len()) };
        if n < 0 {
            return Err(errno());
        }
        buf.truncate(n as usize);
        Ok(buf)
    }
}

/// Whether `dir` is the root of a procfs mount.
pub(crate) fn is_procfs(dir: &Path) -> bool {
    let Ok(p) = CString::new(dir.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: an all-zero `statfs` is a valid value to be overwritten.
    let mut st: c::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: `p` is a valid C string and `st` a valid out-pointer.
    let r = unsafe { c::statfs(p.as_ptr(), &mut st) };
    r == 0 && st.f_type == c::PROC_SUPER_MAGIC
}

/// The non-empty components of a path.
fn split(path: &[u8]) -> impl DoubleEndedIterator<Item = &[u8]> {
    path.split(|&b| b == b'/').filter(|c| !c.is_empty())
}

/// Components joined into a path relative to the root ("." for the root itself).
fn join(comps: &[Vec<u8>]) -> Vec<u8> {
    if comps.is_empty() {
        return b".".to_vec();
    }
    comps.join(&b'/')
}
