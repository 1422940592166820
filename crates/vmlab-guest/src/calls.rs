//! Every x86-64 system call and what the guest kernel does with it: the table in
//! `docs/guest.md` is [`markdown_table`]'s output.

use crate::sysnames::NAMES;
use libc as c;

/// What the guest kernel does with one system call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Handling {
    /// Answered by the guest kernel; the host never runs it (identity, uname, hostname).
    Emulated,
    /// Forwarded to the host with arguments or results translated (guest pids, paths under
    /// the guest root, clone flags).
    Rewritten,
    /// Refused with an error: it could escape the guest or disable the interception.
    Refused,
    /// Runs on the host unchanged.
    Passthrough,
}

impl Handling {
    /// The word in the docs table.
    pub fn name(self) -> &'static str {
        match self {
            Handling::Emulated => "emulated",
            Handling::Rewritten => "rewritten",
            Handling::Refused => "refused",
            Handling::Passthrough => "passed through",
        }
    }
}

// Calls newer than the C library's headers.
const SYS_FCHMODAT2: i64 = 452;
const SYS_SETXATTRAT: i64 = 463;
const SYS_REMOVEXATTRAT: i64 = 466;
const SYS_OPEN_TREE_ATTR: i64 = 467;
const SYS_FILE_GETATTR: i64 = 468;
const SYS_FILE_SETATTR: i64 = 469;

/// How a path argument's final component treats a symbolic link.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Follow {
    /// Always follows (stat, chdir, execve).
    Yes,
    /// Never follows (lstat, unlink, mkdir, readlink, rename).
    No,
    /// Follows unless argument `.0` has `AT_SYMLINK_NOFOLLOW`.
    UnlessAtFlag(usize),
    /// Follows only if argument `.0` has `AT_SYMLINK_FOLLOW` (linkat).
    IfAtFlag(usize),
    /// open-style flags in argument `.0`: no follow with `O_NOFOLLOW` or `O_CREAT|O_EXCL`.
    OpenFlags(usize),
}

/// A path argument: its register index, the directory-descriptor argument it is relative to
/// (none: the current directory), and its link rule.
#[derive(Clone, Copy, Debug)]
pub(crate) struct PathArg {
    pub dirfd: Option<usize>,
    pub path: usize,
    pub follow: Follow,
    /// `AT_EMPTY_PATH` in this argument makes an empty path mean the descriptor itself.
    pub empty_flag: Option<usize>,
}

const fn p(path: usize, follow: Follow) -> PathArg {
    PathArg { dirfd: None, path, follow, empty_flag: None }
}

const fn at(dirfd: usize, path: usize, follow: Follow) -> PathArg {
    PathArg { dirfd: Some(dirfd), path, follow, empty_flag: None }
}

const fn at_empty(dirfd: usize, path: usize, follow: Follow, flags: usize) -> PathArg {
    PathArg { dirfd: Some(dirfd), path, follow, empty_flag: Some(flags) }
}

/// The path arguments of `nr`, if it takes any the guest root must contain.
pub(crate) fn path_args(nr: i64) -> &'static [PathArg] {
    use Follow::*;
    macro_rules! s {
        ($($e:expr),*) => {{
            const V: &[PathArg] = &[$($e),*];
            V
        }};
    }
    match nr {
        c::SYS_open => s!(p(0, OpenFlags(1))),
        c::SYS_creat => s!(p(0, Yes)),
        c::SYS_openat => s!(at(0, 1, OpenFlags(2))),
        c::SYS_stat
        | c::SYS_access
        | c::SYS_chdir
        | c::SYS_chmod
        | c::SYS_chown
        | c::SYS_truncate
        | c::SYS_utime
        | c::SYS_utimes
        | c::SYS_statfs
        | c::SYS_setxattr
        | c::SYS_getxattr
        | c::SYS_listxattr
        | c::SYS_removexattr
        | c::SYS_execve => s!(p(0, Yes)),
        c::SYS_lstat
        | c::SYS_readlink
        | c::SYS_mkdir
        | c::SYS_rmdir
        | c::SYS_unlink
        | c::SYS_lchown
        | c::SYS_mknod
        | c::SYS_lsetxattr
        | c::SYS_lgetxattr
        | c::SYS_llistxattr
        | c::SYS_lremovexattr => s!(p(0, No)),
        c::SYS_newfstatat => s!(at_empty(0, 1, UnlessAtFlag(3), 3)),
        c::SYS_statx => s!(at_empty(0, 1, UnlessAtFlag(2), 2)),
        c::SYS_faccessat | c::SYS_fchmodat | c::SYS_futimesat => s!(at(0, 1, Yes)),
        c::SYS_faccessat2 => s!(at_empty(0, 1, UnlessAtFlag(3), 3)),
        c::SYS_readlinkat | c::SYS_mkdirat | c::SYS_unlinkat | c::SYS_mknodat => s!(at(0, 1, No)),
        c::SYS_fchownat => s!(at_empty(0, 1, UnlessAtFlag(4), 4)),
        c::SYS_utimensat => s!(at(0, 1, UnlessAtFlag(3))),
        c::SYS_execveat => s!(at_empty(0, 1, UnlessAtFlag(4), 4)),
        c::SYS_rename | c::SYS_link => s!(p(0, No), p(1, No)),
        c::SYS_renameat | c::SYS_renameat2 => s!(at(0, 1, No), at(2, 3, No)),
        c::SYS_linkat => s!(at_empty(0, 1, IfAtFlag(4), 4), at(2, 3, No)),
        c::SYS_symlink => s!(p(1, No)),
        c::SYS_symlinkat => s!(at(1, 2, No)),
        c::SYS_inotify_add_watch => s!(at(0, 1, Yes)),
        SYS_FCHMODAT2 => s!(at_empty(0, 1, UnlessAtFlag(3), 3)),
        SYS_SETXATTRAT..=SYS_REMOVEXATTRAT => s!(at_empty(0, 1, UnlessAtFlag(2), 2)),
        SYS_FILE_GETATTR | SYS_FILE_SETATTR => s!(at_empty(0, 1, UnlessAtFlag(4), 4)),
        _ => &[],
    }
}

/// Whether `nr` is a metadata call (stat, access, chmod, chown, utimes, statfs, readlink,
/// xattrs), which the ptrace mechanisms run in the guest kernel on a descriptor under a root.
pub(crate) fn is_metadata(nr: i64) -> bool {
    changes_metadata(nr)
        || matches!(
            nr,
            c::SYS_stat
                | c::SYS_lstat
                | c::SYS_newfstatat
                | c::SYS_statx
                | c::SYS_access
                | c::SYS_faccessat
                | c::SYS_faccessat2
                | c::SYS_statfs
                | c::SYS_readlink
                | c::SYS_readlinkat
                | c::SYS_getxattr
                | c::SYS_lgetxattr
                | c::SYS_listxattr
                | c::SYS_llistxattr
        )
}

/// Whether metadata call `nr` changes something (rather than only reading).
pub(crate) fn changes_metadata(nr: i64) -> bool {
    matches!(
        nr,
        c::SYS_chmod
            | c::SYS_fchmodat
            | c::SYS_fchmodat2
            | c::SYS_chown
            | c::SYS_lchown
            | c::SYS_fchownat
            | c::SYS_utime
            | c::SYS_utimes
            | c::SYS_futimesat
            | c::SYS_utimensat
            | c::SYS_setxattr
            | c::SYS_lsetxattr
            | c::SYS_removexattr
            | c::SYS_lremovexattr
    )
}

/// Calls that return a peer's socket address (accept, recvfrom, ...): under a root, an
/// AF_UNIX path in it is a host path for the ptrace mechanisms.
pub(crate) fn is_peer_address_call(nr: i64) -> bool {
    matches!(nr, c::SYS_accept | c::SYS_accept4 | c::SYS_recvfrom | c::SYS_recvmsg | c::SYS_recvmmsg)
}

/// Calls whose first argument is a clock id, which for a CPU-time clock names a process or a
/// thread by its pid (`clock_getcpuclockid`, `pthread_getcpuclockid`): a negative id whose low
/// three bits are not CLOCKFD's 3 holds the pid, bitwise negated, above those bits.
pub(crate) fn is_clock_call(nr: i64) -> bool {
    CLOCK_CALLS.contains(&nr)
}

/// [`is_clock_call`]'s calls.
pub(crate) const CLOCK_CALLS: [i64; 4] =
    [c::SYS_clock_gettime, c::SYS_clock_getres, c::SYS_clock_nanosleep, c::SYS_timer_create];

/// Calls that translate guest process ids (in arguments, results or both).
pub(crate) fn is_pid_call(nr: i64) -> bool {
    matches!(
        nr,
        c::SYS_kill
            | c::SYS_tkill
            | c::SYS_tgkill
            | c::SYS_wait4
            | c::SYS_waitid
            | c::SYS_getpgid
            | c::SYS_setpgid
            | c::SYS_getsid
            | c::SYS_getpgrp
            | c::SYS_pidfd_open
            | c::SYS_rt_sigqueueinfo
            | c::SYS_rt_tgsigqueueinfo
            | c::SYS_sched_setaffinity
            | c::SYS_sched_getaffinity
            | c::SYS_sched_setparam
            | c::SYS_sched_getparam
            | c::SYS_sched_setscheduler
            | c::SYS_sched_getscheduler
            | c::SYS_sched_rr_get_interval
            | c::SYS_sched_setattr
            | c::SYS_sched_getattr
            | c::SYS_prlimit64
            | c::SYS_getpriority
            | c::SYS_setpriority
            | c::SYS_ioprio_get
            | c::SYS_ioprio_set
            | c::SYS_clone
            | c::SYS_fork
            | c::SYS_vfork
    )
}

/// The metadata calls newer than the guest kernel's handling of them on a descriptor
/// (setxattrat to removexattrat, Linux 6.13; file_getattr and file_setattr, 6.17): rewriting
/// their paths would leave them open to the races `meta.rs` closes for the older ones, so they
/// are refused and programs use the older forms.
pub(crate) fn is_newest_metadata(nr: i64) -> bool {
    matches!(nr, SYS_SETXATTRAT..=SYS_REMOVEXATTRAT | SYS_FILE_GETATTR | SYS_FILE_SETATTR)
}

/// The error a [`Handling::Refused`] call gets: ENOSYS where a program should take it for a
/// call this kernel lacks and fall back (C libraries do, for clone3 and openat2), and for any
/// number the guest kernel does not know, as the host kernel answers those; EPERM for the
/// calls it knows and will not run. Each refused call's reason in [`handling`] starts with it.
pub fn refused_errno(nr: i64) -> i32 {
    match nr {
        c::SYS_clone3 | c::SYS_openat2 | c::SYS_io_uring_setup | c::SYS_io_uring_enter | c::SYS_io_uring_register => {
            c::ENOSYS
        }
        n if is_newest_metadata(n) || n < 0 || n >= NAMES.len() as i64 => c::ENOSYS,
        _ => c::EPERM,
    }
}

/// How the guest kernel treats `nr`, and why, in one phrase.
pub fn handling(nr: i64) -> (Handling, &'static str) {
    use Handling::*;
    if is_newest_metadata(nr) {
        return (
            Refused,
            "ENOSYS: a metadata call newer than the guest kernel's descriptor handling; the older xattr and ioctl forms remain",
        );
    }
    if !path_args(nr).is_empty() {
        return match nr {
            c::SYS_execve | c::SYS_execveat => {
                (Rewritten, "path contained in the guest root; ptrace mechanisms run the root's `#!` and ELF interpreters; the new image is tracked")
            }
            c::SYS_symlink | c::SYS_symlinkat => {
                (Rewritten, "link path contained; the target is stored as given and resolved in the root when used")
            }
            n if is_metadata(n) => (
                Rewritten,
                "paths contained in the guest root; ptrace mechanisms run it on a descriptor opened with openat2(RESOLVE_IN_ROOT)",
            ),
            c::SYS_mknod | c::SYS_mknodat => (
                Rewritten,
                "paths contained in the guest root; device nodes (S_IFCHR, S_IFBLK) refused (EPERM) under every root",
            ),
            _ => (Rewritten, "paths contained in the guest root (.., symlinks, directory descriptors, /proc)"),
        };
    }
    match nr {
        c::SYS_getpid | c::SYS_getppid | c::SYS_gettid => (Emulated, "guest process ids"),
        c::SYS_getuid | c::SYS_geteuid | c::SYS_getgid | c::SYS_getegid | c::SYS_getresuid | c::SYS_getresgid => {
            (Emulated, "the configured guest uid/gid")
        }
        c::SYS_setuid
        | c::SYS_setgid
        | c::SYS_setreuid
        | c::SYS_setregid
        | c::SYS_setresuid
        | c::SYS_setresgid
        | c::SYS_setfsuid
        | c::SYS_setfsgid => (Emulated, "changes the guest's ids (allowed for guest uid 0 only), not the host's"),
        c::SYS_uname | c::SYS_sethostname | c::SYS_setdomainname => {
            (Emulated, "the guest's own hostname and domain name")
        }
        c::SYS_getcwd => (Rewritten, "the result is the path inside the guest root"),
        c::SYS_getsockname | c::SYS_getpeername => {
            (Rewritten, "under a root (ptrace mechanisms): an AF_UNIX path in the result is made a guest path")
        }
        c::SYS_accept | c::SYS_accept4 | c::SYS_recvfrom | c::SYS_recvmsg | c::SYS_recvmmsg => {
            (Rewritten, "under a root (ptrace mechanisms): an AF_UNIX path in the peer's address is made a guest path")
        }
        c::SYS_rt_sigtimedwait => (
            Rewritten,
            "the sender's pid in the siginfo is made a guest pid (ptrace mechanisms; the others have a pid namespace)",
        ),
        c::SYS_fchdir => (Rewritten, "refused for a directory outside the guest root"),
        n if is_clock_call(n) => (
            Rewritten,
            "the pid in a CPU-time clock id (a process's or thread's clock) is made a host pid (ptrace mechanisms; the others have a pid namespace)",
        ),
        c::SYS_bind | c::SYS_connect | c::SYS_sendto | c::SYS_sendmsg => {
            (Rewritten, "AF_UNIX socket paths contained in the guest root (ptrace mechanisms: connect and send reach the socket through a descriptor opened in the root); abstract names refused under a root")
        }
        c::SYS_sendmmsg => (
            Rewritten,
            "as sendmsg; under a root the ptrace mechanisms send the first message only (as sendmsg, from a copy)",
        ),
        c::SYS_ioctl => (Rewritten, "TIOCSTI, TIOCLINUX, TIOCSETD refused (EPERM): they inject input into a terminal"),
        c::SYS_clone => {
            (Rewritten, "the child's pid becomes a guest pid; CLONE_UNTRACED is removed, namespace flags refused")
        }
        c::SYS_prctl => (Rewritten, "PR_SET_SECCOMP, PR_SET_PTRACER, PR_SET_SYSCALL_USER_DISPATCH, PR_SET_MM refused"),
        n if is_pid_call(n) => {
            (Rewritten, "guest process ids translated; host processes outside the guest are invisible")
        }
        n if n < 0 || n >= NAMES.len() as i64 => {
            (Refused, "ENOSYS: a call newer than the guest kernel could take a path it does not know")
        }
        c::SYS_ptrace => (Refused, "EPERM: a guest may not trace (it would race the guest kernel)"),
        c::SYS_seccomp => (Refused, "EPERM: a guest filter could hide calls from the guest kernel"),
        c::SYS_clone3 => (Refused, "ENOSYS: its flags are in memory; C libraries fall back to clone"),
        c::SYS_openat2 => (Refused, "ENOSYS: C libraries fall back to openat"),
        c::SYS_process_vm_readv | c::SYS_process_vm_writev | c::SYS_kcmp | c::SYS_pidfd_getfd => {
            (Refused, "EPERM: reaches into another process")
        }
        c::SYS_io_uring_setup | c::SYS_io_uring_enter | c::SYS_io_uring_register => {
            (Refused, "ENOSYS: io_uring runs calls without a system call to trap")
        }
        c::SYS_mount
        | c::SYS_umount2
        | c::SYS_pivot_root
        | c::SYS_chroot
        | c::SYS_unshare
        | c::SYS_setns
        | c::SYS_open_by_handle_at
        | c::SYS_name_to_handle_at
        | c::SYS_open_tree
        | c::SYS_move_mount
        | c::SYS_fsopen
        | c::SYS_fsconfig
        | c::SYS_fsmount
        | c::SYS_fspick
        | c::SYS_mount_setattr
        | c::SYS_fanotify_init
        | c::SYS_fanotify_mark
        | SYS_OPEN_TREE_ATTR
        | c::SYS_quotactl
        | c::SYS_uselib
        | c::SYS_acct
        | c::SYS_swapon
        | c::SYS_swapoff => (Refused, "EPERM: changes or bypasses the file-system view"),
        c::SYS_bpf
        | c::SYS_init_module
        | c::SYS_finit_module
        | c::SYS_delete_module
        | c::SYS_kexec_load
        | c::SYS_kexec_file_load
        | c::SYS_reboot
        | c::SYS_iopl
        | c::SYS_ioperm
        | c::SYS_syslog
        | c::SYS_settimeofday
        | c::SYS_clock_settime
        | c::SYS_clock_adjtime
        | c::SYS_adjtimex
        | c::SYS_vhangup
        | c::SYS_perf_event_open
        | c::SYS_lookup_dcookie => (Refused, "EPERM: acts on the host machine"),
        _ => (Passthrough, ""),
    }
}

/// Whether a filter must send `nr` to the guest kernel. Path calls matter only under a root
/// other than `/`; with `all` (`--strace`) every call does.
pub fn needs_trap(nr: i64, rooted: bool, all: bool) -> bool {
    if all {
        return true;
    }
    if matches!(nr, c::SYS_execve | c::SYS_execveat | c::SYS_mknod | c::SYS_mknodat) {
        return true;
    }
    if nr == c::SYS_ioctl {
        // Only the refused requests: the filters add a rule comparing the request.
        return false;
    }
    if is_clock_call(nr) {
        // Only seccomp-trace's filter stops these, and only with a CPU-time clock id (a
        // negative one): the other filters' guests have a pid namespace.
        return false;
    }
    if is_peer_address_call(nr) || nr == c::SYS_rt_sigtimedwait {
        // Only seccomp-trace's filter stops these (the peer address calls under a root): the
        // other filters' guests have the root as their chroot and a pid namespace.
        return false;
    }
    match handling(nr).0 {
        Handling::Passthrough => false,
        Handling::Rewritten => {
            let path_only = !path_args(nr).is_empty()
                || matches!(
                    nr,
                    c::SYS_getcwd
                        | c::SYS_fchdir
                        | c::SYS_bind
                        | c::SYS_connect
                        | c::SYS_sendto
                        | c::SYS_sendmsg
                        | c::SYS_sendmmsg
                        | c::SYS_getsockname
                        | c::SYS_getpeername
                );
            rooted || !path_only
        }
        _ => true,
    }
}

/// The docs table: one row per system call number with a name.
pub fn markdown_table() -> String {
    let mut out = String::from("| nr | system call | handling | how |\n| ---: | --- | --- | --- |\n");
    for (nr, name) in NAMES.iter().enumerate() {
        if name.is_empty() {
            continue;
        }
        let (h, why) = handling(nr as i64);
        out.push_str(&format!("| {nr} | {name} | {} | {why} |\n", h.name()));
    }
    out
}

/// The SysV IPC and POSIX message queue calls that reach the IPC namespace: refused (EPERM)
/// when the guest shares the host's (the guest kernel had no privilege to make one).
pub(crate) const IPC_CALLS: [i64; 14] = [
    c::SYS_shmget,
    c::SYS_shmat,
    c::SYS_shmctl,
    c::SYS_shmdt,
    c::SYS_semget,
    c::SYS_semop,
    c::SYS_semctl,
    c::SYS_semtimedop,
    c::SYS_msgget,
    c::SYS_msgsnd,
    c::SYS_msgrcv,
    c::SYS_msgctl,
    c::SYS_mq_open,
    c::SYS_mq_unlink,
];

/// The ioctl requests the guest kernel refuses (EPERM) on any descriptor: TIOCSTI pushes
/// input into a terminal (the user's shell, if the guest shares it), TIOCLINUX can too on a
/// virtual console, and TIOCSETD changes the terminal's line discipline. The host reads the
/// request as 32 bits: only those are compared.
pub(crate) const REFUSED_IOCTLS: [u32; 3] = [c::TIOCSTI as u32, c::TIOCLINUX as u32, c::TIOCSETD as u32];

#[cfg(test)]
mod tests {
    use super::*;

    /// docs/guest.md carries the table between two markers; `VMLAB_BLESS=1 cargo test` rewrites it.
    #[test]
    fn the_docs_table_lists_every_call_as_the_guest_kernel_treats_it() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/guest.md");
        let doc = std::fs::read_to_string(path).expect("docs/guest.md");
        let (begin, end) = ("<!-- syscall table begin -->\n", "<!-- syscall table end -->");
        let a = doc.find(begin).expect("begin marker") + begin.len();
        let b = doc.find(end).expect("end marker");
        let table = markdown_table();
        if std::env::var_os("VMLAB_BLESS").is_some() {
            std::fs::write(path, format!("{}{table}{}", &doc[..a], &doc[b..])).unwrap();
            return;
        }
        assert!(doc[a..b] == table, "docs/guest.md's table is stale: run VMLAB_BLESS=1 cargo test -p vmlab-guest");
    }

    /// A refused call fails with the error its reason in the docs' table names, for every
    /// number the seccomp filters can send (and -1, what the ptrace mechanisms make of a call
    /// of another ABI).
    #[test]
    fn refused_calls_fail_with_the_error_their_reason_names() {
        for nr in -1..512 {
            let (h, why) = handling(nr);
            if h != Handling::Refused {
                continue;
            }
            let named = why.split(':').next().unwrap();
            let errno = match refused_errno(nr) {
                c::ENOSYS => "ENOSYS",
                c::EPERM => "EPERM",
                e => panic!("errno {e}"),
            };
            assert_eq!(named, errno, "call {nr}: {why}");
        }
        assert_eq!(refused_errno(500), c::ENOSYS);
        assert_eq!(refused_errno(-1), c::ENOSYS);
        assert_eq!(refused_errno(0x4000_0027), c::ENOSYS);
        assert_eq!(refused_errno(c::SYS_ptrace), c::EPERM);
    }

    #[test]
    fn path_calls_are_rewritten_and_escapes_refused() {
        assert_eq!(handling(c::SYS_openat).0, Handling::Rewritten);
        assert_eq!(handling(c::SYS_getppid).0, Handling::Emulated);
        assert_eq!(handling(c::SYS_ptrace).0, Handling::Refused);
        assert_eq!(handling(c::SYS_read).0, Handling::Passthrough);
        assert!(!needs_trap(c::SYS_openat, false, false) && needs_trap(c::SYS_openat, true, false));
        assert!(needs_trap(c::SYS_getpid, false, false) && !needs_trap(c::SYS_read, true, false));
    }
}
