//! `--strace`: one line per guest system call on stderr, with guest pids.

use super::kernel::{Call, Kernel};
use super::mem;
use crate::calls;
use crate::sysnames::NAMES;
use std::io::Write as _;

/// The name of call number `nr`.
pub(crate) fn name(nr: i64) -> String {
    usize::try_from(nr)
        .ok()
        .and_then(|i| NAMES.get(i))
        .filter(|n| !n.is_empty())
        .map_or_else(|| format!("syscall_{nr}"), |n| n.to_string())
}

/// `[pid N] name(args` for `call` made by host thread `tid` (strings read from its memory).
pub(crate) fn call_line(kernel: &mut Kernel, tid: i32, call: &Call) -> String {
    let guest = kernel.guest_id(tid);
    let paths: Vec<usize> = calls::path_args(call.nr).iter().map(|p| p.path).collect();
    let nargs = arg_count(call.nr);
    let args: Vec<String> = call.args[..nargs]
        .iter()
        .enumerate()
        .map(|(i, &v)| {
            if paths.contains(&i) {
                match mem::read_cstr(tid, v, 4096) {
                    Ok(s) => format!("{:?}", String::from_utf8_lossy(&s)),
                    Err(_) => format!("{v:#x}"),
                }
            } else {
                number(v)
            }
        })
        .collect();
    format!("[pid {guest}] {}({})", name(call.nr), args.join(", "))
}

/// Prints `line` with its result.
pub(crate) fn print(line: &str, ret: i64) {
    let result = if (-4095..0).contains(&ret) {
        let e = std::io::Error::from_raw_os_error(-ret as i32);
        format!("-1 {} ({})", errno_name(-ret as i32), e.to_string().split(" (os error").next().unwrap_or(""))
    } else {
        number(ret as u64)
    };
    let _ = writeln!(std::io::stderr().lock(), "{line} = {result}");
}

/// Prints `line` for a call whose result the mechanism does not see.
pub(crate) fn print_unfinished(line: &str) {
    let _ = writeln!(std::io::stderr().lock(), "{line} = ? (run by the host)");
}

fn number(v: u64) -> String {
    let s = v as i64;
    if (-4096..1 << 20).contains(&s) {
        s.to_string()
    } else {
        format!("{v:#x}")
    }
}

/// How many arguments to show for `nr` (6 when unknown).
fn arg_count(nr: i64) -> usize {
    use libc as c;
    match nr {
        c::SYS_getpid
        | c::SYS_getppid
        | c::SYS_gettid
        | c::SYS_getuid
        | c::SYS_geteuid
        | c::SYS_getgid
        | c::SYS_getegid
        | c::SYS_fork
        | c::SYS_vfork
        | c::SYS_getpgrp
        | c::SYS_sched_yield
        | c::SYS_sync
        | c::SYS_pause
        | c::SYS_rt_sigreturn => 0,
        c::SYS_close
        | c::SYS_exit
        | c::SYS_exit_group
        | c::SYS_chdir
        | c::SYS_fchdir
        | c::SYS_unlink
        | c::SYS_rmdir
        | c::SYS_uname
        | c::SYS_brk
        | c::SYS_dup
        | c::SYS_umask
        | c::SYS_set_tid_address
        | c::SYS_getpgid
        | c::SYS_getsid => 1,
        c::SYS_stat
        | c::SYS_lstat
        | c::SYS_fstat
        | c::SYS_access
        | c::SYS_kill
        | c::SYS_mkdir
        | c::SYS_rename
        | c::SYS_dup2
        | c::SYS_getcwd
        | c::SYS_munmap
        | c::SYS_pipe2
        | c::SYS_chmod
        | c::SYS_link
        | c::SYS_symlink
        | c::SYS_setpgid
        | c::SYS_tkill
        | c::SYS_arch_prctl
        | c::SYS_sethostname
        | c::SYS_clock_gettime
        | c::SYS_open
        | c::SYS_creat => match nr {
            c::SYS_open => 3,
            _ => 2,
        },
        c::SYS_read
        | c::SYS_write
        | c::SYS_openat
        | c::SYS_lseek
        | c::SYS_execve
        | c::SYS_ioctl
        | c::SYS_fcntl
        | c::SYS_readlink
        | c::SYS_getdents64
        | c::SYS_mprotect
        | c::SYS_dup3
        | c::SYS_tgkill
        | c::SYS_connect
        | c::SYS_bind
        | c::SYS_socket
        | c::SYS_mkdirat
        | c::SYS_unlinkat
        | c::SYS_faccessat
        | c::SYS_getrandom => 3,
        c::SYS_newfstatat
        | c::SYS_wait4
        | c::SYS_rt_sigaction
        | c::SYS_rt_sigprocmask
        | c::SYS_readlinkat
        | c::SYS_pread64
        | c::SYS_pwrite64
        | c::SYS_faccessat2
        | c::SYS_renameat
        | c::SYS_prlimit64 => 4,
        c::SYS_statx
        | c::SYS_clone
        | c::SYS_waitid
        | c::SYS_execveat
        | c::SYS_renameat2
        | c::SYS_linkat
        | c::SYS_prctl => 5,
        _ => 6,
    }
}

/// The symbolic name of an errno value.
fn errno_name(e: i32) -> String {
    use libc as c;
    let names: &[(i32, &str)] = &[
        (c::EPERM, "EPERM"),
        (c::ENOENT, "ENOENT"),
        (c::ESRCH, "ESRCH"),
        (c::EINTR, "EINTR"),
        (c::EIO, "EIO"),
        (c::EBADF, "EBADF"),
        (c::ECHILD, "ECHILD"),
        (c::EAGAIN, "EAGAIN"),
        (c::ENOMEM, "ENOMEM"),
        (c::EACCES, "EACCES"),
        (c::EFAULT, "EFAULT"),
        (c::EEXIST, "EEXIST"),
        (c::EXDEV, "EXDEV"),
        (c::ENOTDIR, "ENOTDIR"),
        (c::EISDIR, "EISDIR"),
        (c::EINVAL, "EINVAL"),
        (c::ENOTTY, "ENOTTY"),
        (c::ESPIPE, "ESPIPE"),
        (c::EPIPE, "EPIPE"),
        (c::ERANGE, "ERANGE"),
        (c::ENAMETOOLONG, "ENAMETOOLONG"),
        (c::ENOSYS, "ENOSYS"),
        (c::ENOTEMPTY, "ENOTEMPTY"),
        (c::ELOOP, "ELOOP"),
        (c::ENODATA, "ENODATA"),
        (c::ENOTSOCK, "ENOTSOCK"),
        (c::EOPNOTSUPP, "EOPNOTSUPP"),
        (c::EAFNOSUPPORT, "EAFNOSUPPORT"),
        (c::ECONNREFUSED, "ECONNREFUSED"),
        (c::EINPROGRESS, "EINPROGRESS"),
        (c::ETIMEDOUT, "ETIMEDOUT"),
    ];
    names.iter().find(|(n, _)| *n == e).map_or_else(|| format!("E{e}"), |(_, s)| s.to_string())
}
