//! `vmlab-guest-bench`: the small real programs of the guest benchmark suite (lmbench style),
//! and the probes the tests run inside a guest.
//!
//! `vmlab-guest-bench OP ITERATIONS` runs one operation ITERATIONS times after a warm-up and
//! prints one number: microseconds per operation, or MB/s for the bandwidth operations.
//! `vmlab-guest-bench ids` prints the process ids a guest sees; `vmlab-guest-bench probe
//! OUTSIDE HOSTPID` tries to escape a guest root and prints one line per attempt; `vmlab-guest-bench
//! race DIR NAME INODE [ROUNDS]` races metadata calls against a symbolic-link swap;
//! `vmlab-guest-bench badstack` clones onto stacks the child cannot use and prints how the child
//! ended; `vmlab-guest-bench turns SPINNERS CALLS` counts the calls other threads make while one
//! thread makes CALLS.

use libc as c;
use std::ffi::CString;
use std::io::{Read, Write};
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let op = args.get(1).map(String::as_str).unwrap_or("");
    let n: u64 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(1000).max(1);
    match op {
        "hello" => {}
        "ids" => ids(),
        "probe" => probe(&args[2], args.get(3).and_then(|s| s.parse().ok()).unwrap_or(0)),
        "scmrights" => received_directory(&args[2]),
        "hostproc" => host_processes(args.get(2).and_then(|s| s.parse().ok()).unwrap_or(0)),
        "stubjump" => stub_jump(),
        "badstack" => bad_stack(),
        "turns" => turns(n, args.get(3).and_then(|s| s.parse().ok()).unwrap_or(2000)),
        "race" => race(
            &args[2],
            &args[3],
            args[4].parse().unwrap_or(0),
            args.get(5).and_then(|s| s.parse().ok()).unwrap_or(2000),
        ),
        "fileread" | "mmapread" => println!("{:.1}", bandwidth(op, n)),
        _ => match latency(op, n) {
            Some(us) => println!("{us:.3}"),
            None => {
                eprintln!("vmlab-guest-bench: unknown operation '{op}'");
                std::process::exit(2);
            }
        },
    }
}

/// `spinners` threads make getpgid(0) calls as fast as they can while one more thread, started
/// before them, makes `calls` of them; prints "turns calls=CALLS most=M", M the most calls one
/// spinner made meanwhile. Natively the host schedules the threads fairly; a guest kernel that
/// serves the stops of the newest threads first (the host's list of tracees is newest first)
/// lets the spinners run far ahead of the older thread.
fn turns(spinners: u64, calls: u64) {
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    use std::sync::Arc;
    let (started, go, done) =
        (Arc::new(AtomicU64::new(0)), Arc::new(AtomicBool::new(false)), Arc::new(AtomicBool::new(false)));
    let first = {
        let go = go.clone();
        std::thread::spawn(move || {
            while !go.load(Ordering::SeqCst) {
                std::hint::spin_loop();
            }
            for _ in 0..calls {
                // SAFETY: getpgid has no memory arguments.
                unsafe { c::getpgid(0) };
            }
        })
    };
    let counts: Vec<Arc<AtomicU64>> = (0..spinners).map(|_| Arc::new(AtomicU64::new(0))).collect();
    let threads: Vec<_> = counts
        .iter()
        .map(|count| {
            let (count, done, started) = (count.clone(), done.clone(), started.clone());
            std::thread::spawn(move || {
                started.fetch_add(1, Ordering::SeqCst);
                while !done.load(Ordering::SeqCst) {
                    // SAFETY: as above.
                    unsafe { c::getpgid(0) };
                    count.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();
    while started.load(Ordering::SeqCst) < spinners {
        std::hint::spin_loop();
    }
    let base: Vec<u64> = counts.iter().map(|c| c.load(Ordering::SeqCst)).collect();
    go.store(true, Ordering::SeqCst);
    let _ = first.join();
    let most = counts.iter().zip(&base).map(|(c, b)| c.load(Ordering::SeqCst) - b).max().unwrap_or(0);
    done.store(true, Ordering::SeqCst);
    for t in threads {
        let _ = t.join();
    }
    println!("turns calls={calls} most={most}");
}

fn cstr(s: &str) -> CString {
    CString::new(s).expect("no NUL")
}

/// Times `f` over `n` iterations after `n / 10` warm-up ones: microseconds per iteration.
fn time(n: u64, mut f: impl FnMut()) -> f64 {
    for _ in 0..(n / 10).max(1) {
        f();
    }
    let t = Instant::now();
    for _ in 0..n {
        f();
    }
    t.elapsed().as_secs_f64() * 1e6 / n as f64
}

extern "C" fn on_usr1(_: c::c_int) {}

fn install(sig: c::c_int) {
    // SAFETY: an all-zero sigaction is valid; the handler does nothing.
    unsafe {
        let mut sa: c::sigaction = std::mem::zeroed();
        sa.sa_sigaction = on_usr1 as extern "C" fn(c::c_int) as usize;
        c::sigaction(sig, &sa, std::ptr::null_mut());
    }
}

/// Forks a child running `child` and returns its pid.
fn spawn(child: impl FnOnce()) -> i32 {
    // SAFETY: the benchmark is single-threaded, so the child may run arbitrary code.
    let pid = unsafe { c::fork() };
    if pid == 0 {
        child();
        // SAFETY: ends the child without running the parent's exit handlers.
        unsafe { c::_exit(0) };
    }
    pid
}

fn reap(pid: i32) {
    // SAFETY: a null status pointer is allowed.
    unsafe { c::waitpid(pid, std::ptr::null_mut(), 0) };
}

fn pipe() -> (i32, i32) {
    let mut p = [0; 2];
    // SAFETY: `p` has room for two descriptors.
    unsafe { c::pipe(p.as_mut_ptr()) };
    (p[0], p[1])
}

fn rw(fd: i32, write: bool, buf: &mut [u8]) {
    // SAFETY: `buf` is a live buffer of the given length.
    unsafe {
        if write {
            c::write(fd, buf.as_ptr().cast(), buf.len());
        } else {
            c::read(fd, buf.as_mut_ptr().cast(), buf.len());
        }
    }
}

/// Round trips of one byte between this process and an echoing child over `(a, b)`
/// descriptor pairs: the parent writes `to_child`, reads `from_child`.
fn round_trips(n: u64, to_child: i32, from_child: i32, child_in: i32, child_out: i32, work: usize) -> f64 {
    let total = n + (n / 10).max(1);
    let pid = spawn(move || {
        let mut b = [0u8; 1];
        let mut ws = vec![1u8; work];
        for _ in 0..total {
            rw(child_in, false, &mut b);
            touch(&mut ws);
            rw(child_out, true, &mut b);
        }
    });
    let mut b = [0u8; 1];
    let mut ws = vec![1u8; work];
    let us = time(n, || {
        rw(to_child, true, &mut b);
        rw(from_child, false, &mut b);
        touch(&mut ws);
    });
    reap(pid);
    us
}

/// Reads and writes every cache line of a working set (lat_ctx's "size").
fn touch(ws: &mut [u8]) {
    for i in (0..ws.len()).step_by(64) {
        ws[i] = ws[i].wrapping_add(1);
    }
    std::hint::black_box(ws);
}

fn latency(op: &str, n: u64) -> Option<f64> {
    let devnull = cstr("/dev/null");
    let self_exe = std::env::current_exe().ok()?;
    let exe = cstr(self_exe.to_str()?);
    Some(match op {
        // SAFETY (all the closures below): plain system calls on live C strings and buffers.
        "null" => time(n, || unsafe {
            c::syscall(c::SYS_getppid);
        }),
        "stat" => {
            // SAFETY: all-zero is a valid stat.
            let mut st: c::stat = unsafe { std::mem::zeroed() };
            time(n, || unsafe {
                c::stat(devnull.as_ptr(), &mut st);
            })
        }
        "fstat" => {
            // SAFETY: as above.
            let mut st: c::stat = unsafe { std::mem::zeroed() };
            let fd = unsafe { c::open(devnull.as_ptr(), c::O_RDONLY) };
            time(n, || unsafe {
                c::fstat(fd, &mut st);
            })
        }
        "openclose" => time(n, || unsafe {
            let fd = c::open(devnull.as_ptr(), c::O_RDONLY);
            c::close(fd);
        }),
        "siginstall" => time(n, || install(c::SIGUSR1)),
        "sigdeliver" => {
            install(c::SIGUSR1);
            // SAFETY: getpid has no arguments.
            let me = unsafe { c::getpid() };
            time(n, || unsafe {
                c::kill(me, c::SIGUSR1);
            })
        }
        "pipe" => {
            let (r1, w1) = pipe();
            let (r2, w2) = pipe();
            round_trips(n, w1, r2, r1, w2, 0)
        }
        "unix" => {
            let mut sv = [0; 2];
            // SAFETY: `sv` has room for two descriptors.
            unsafe { c::socketpair(c::AF_UNIX, c::SOCK_STREAM, 0, sv.as_mut_ptr()) };
            round_trips(n, sv[0], sv[0], sv[1], sv[1], 0)
        }
        "tcp" => tcp(n)?,
        "fork" => time(n, || {
            let pid = spawn(|| {});
            reap(pid);
        }),
        "forkexec" => time(n, || {
            let pid = spawn(|| unsafe {
                let hello = cstr("hello");
                let argv = [exe.as_ptr(), hello.as_ptr(), std::ptr::null()];
                c::execv(exe.as_ptr(), argv.as_ptr());
            });
            reap(pid);
        }),
        "forksh" => {
            let cmd = cstr(&format!("{} hello", self_exe.display()));
            time(n, || {
                let pid = spawn(|| unsafe {
                    let (sh, dash_c) = (cstr("/bin/sh"), cstr("-c"));
                    let argv = [sh.as_ptr(), dash_c.as_ptr(), cmd.as_ptr(), std::ptr::null()];
                    c::execv(sh.as_ptr(), argv.as_ptr());
                });
                reap(pid);
            })
        }
        "ctx0" | "ctx16" => {
            let work = if op == "ctx0" { 0 } else { 16 * 1024 };
            let (r1, w1) = pipe();
            let (r2, w2) = pipe();
            // A round trip is two context switches. Unlike lat_ctx, the cost of the pipe
            // transfer is not subtracted: in a guest, measuring it traps too, and the
            // difference of two trapped figures is noise.
            round_trips(n, w1, r2, r1, w2, work) / 2.0
        }
        _ => return None,
    })
}

fn tcp(n: u64) -> Option<f64> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").ok()?;
    let port = listener.local_addr().ok()?.port();
    let total = n + (n / 10).max(1);
    let pid = spawn(move || {
        if let Ok((mut s, _)) = listener.accept() {
            let _ = s.set_nodelay(true);
            let mut b = [0u8; 1];
            for _ in 0..total {
                if s.read_exact(&mut b).is_err() || s.write_all(&b).is_err() {
                    break;
                }
            }
        }
    });
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_nodelay(true).ok()?;
    let mut b = [0u8; 1];
    let us = time(n, || {
        let _ = s.write_all(&b);
        let _ = s.read_exact(&mut b);
    });
    drop(s);
    reap(pid);
    Some(us)
}

/// File reread (read(2) of 64 KiB blocks) or mmap reread of an 8 MiB file, `n` passes: MB/s.
fn bandwidth(op: &str, n: u64) -> f64 {
    const SIZE: usize = 8 << 20;
    let path = std::env::temp_dir().join(format!("vmlab-guest-bench-{}", std::process::id()));
    std::fs::write(&path, vec![7u8; SIZE]).expect("temp file");
    let mut f = std::fs::File::open(&path).expect("temp file");
    let passes = n.clamp(1, 1000);
    let us = match op {
        "fileread" => {
            let mut buf = vec![0u8; 64 << 10];
            time(passes, || {
                use std::io::Seek;
                f.seek(std::io::SeekFrom::Start(0)).expect("seek");
                let mut sum = 0u64;
                while let Ok(k) = f.read(&mut buf) {
                    if k == 0 {
                        break;
                    }
                    sum += buf[..k].iter().step_by(64).map(|&b| b as u64).sum::<u64>();
                }
                std::hint::black_box(sum);
            })
        }
        _ => {
            use std::os::fd::AsRawFd;
            // SAFETY: maps the whole file read-only; unmapped below and only read meanwhile.
            let p = unsafe { c::mmap(std::ptr::null_mut(), SIZE, c::PROT_READ, c::MAP_SHARED, f.as_raw_fd(), 0) };
            // SAFETY: `p` maps SIZE readable bytes.
            let bytes = unsafe { std::slice::from_raw_parts(p as *const u8, SIZE) };
            let us = time(passes, || {
                std::hint::black_box(bytes.iter().step_by(64).map(|&b| b as u64).sum::<u64>());
            });
            // SAFETY: `p` came from mmap with this length.
            unsafe { c::munmap(p, SIZE) };
            us
        }
    };
    let _ = std::fs::remove_file(&path);
    SIZE as f64 / us
}

/// Makes ptrace(PTRACE_TRACEME) through a `syscall` instruction in the sigsys stub's code page
/// (the one followed by "store rax at [r13 + 144]; ret", so that it comes back here): a call
/// from the stub's page must be checked like any other. Prints "stub-jump refused ERRNO",
/// "stub-jump ESCAPED", or "stub-jump absent" when the process has no stub.
fn stub_jump() {
    const BASE: u64 = 0x3e5a_0000_0000;
    let mapped = std::fs::read_to_string("/proc/self/maps")
        .is_ok_and(|m| m.lines().any(|l| l.starts_with(&format!("{BASE:x}-"))));
    // syscall; mov [r13 + 0x90], rax; ret
    let pattern = [0x0f, 0x05, 0x49, 0x89, 0x85, 0x90, 0x00, 0x00, 0x00, 0xc3];
    // SAFETY: the stub's code page is mapped readable (checked above) and 4096 bytes long.
    let code = mapped.then(|| unsafe { std::slice::from_raw_parts(BASE as *const u8, 4096) });
    let Some(at) = code.and_then(|c| c.windows(pattern.len()).position(|w| w == pattern)) else {
        println!("stub-jump absent");
        return;
    };
    let target = BASE + at as u64;
    let mut scratch = [0i64; 32];
    let ret: i64;
    // SAFETY: calls the stub's `syscall; mov [r13 + 144], rax; ret` with r13 at `scratch`
    // (32 words: offset 144 is inside), rax the call number and the arguments in their
    // registers; the sequence returns here. r13 is saved and restored around it.
    unsafe {
        std::arch::asm!(
            "push r13",
            "mov r13, {s}",
            "call {t}",
            "pop r13",
            s = in(reg) scratch.as_mut_ptr(),
            t = in(reg) target,
            inout("rax") c::SYS_ptrace => ret,
            in("rdi") c::PTRACE_TRACEME as u64,
            in("rsi") 0u64,
            in("rdx") 0u64,
            in("r10") 0u64,
            out("rcx") _,
            out("r11") _,
        );
    }
    if ret == 0 {
        println!("stub-jump ESCAPED");
    } else {
        println!("stub-jump refused {}", -ret);
    }
}

/// clone(CLONE_VM | SIGCHLD) onto a stack the child cannot use: the top of a page that was
/// unmapped, then the middle of a read-only page. Natively the call returns the child's pid
/// and the child dies of SIGSEGV at its first use of that stack (a CLONE_VM clone keeps no
/// alternate signal stack). Prints a line per stack, "bad-stack KIND child signal N" (or
/// "child exit N", or "clone failed ERRNO").
fn bad_stack() {
    for (kind, prot, unmap, offset) in
        [("unmapped", c::PROT_READ | c::PROT_WRITE, true, 4096), ("read-only", c::PROT_READ, false, 2048)]
    {
        // SAFETY: maps a page of our own (and unmaps it again for the unmapped stack). The
        // clone's child shares our memory but runs none of our code: it comes back from
        // the raw call onto its stack and faults. The parent waits for it.
        unsafe {
            let page = c::mmap(std::ptr::null_mut(), 4096, prot, c::MAP_PRIVATE | c::MAP_ANONYMOUS, -1, 0);
            assert_ne!(page, c::MAP_FAILED, "mmap");
            if unmap {
                c::munmap(page, 4096);
            }
            let stack = page as u64 + offset;
            let pid = c::syscall(c::SYS_clone, (c::CLONE_VM | c::SIGCHLD) as u64, stack, 0u64, 0u64, 0u64);
            if pid < 0 {
                println!("bad-stack {kind} clone failed {}", *c::__errno_location());
                continue;
            }
            let mut status = 0;
            c::waitpid(pid as c::pid_t, &mut status, 0);
            if c::WIFSIGNALED(status) {
                println!("bad-stack {kind} child signal {}", c::WTERMSIG(status));
            } else {
                println!("bad-stack {kind} child exit {}", c::WEXITSTATUS(status));
            }
            if !unmap {
                c::munmap(page, 4096);
            }
        }
    }
}

/// Races metadata calls against a directory swapped for a symbolic link that climbs out of the
/// root. In `dir` (its depth below `/` is the climb), `a` is a directory holding a file `name`
/// and `b` a symbolic link to `../..` up to the root's parent, where the file `name` outside
/// the root has inode `outside`. One thread keeps exchanging `a` and `b` (RENAME_EXCHANGE)
/// while this one stats, chmods (0640) and utimes `dir/a/name` `rounds` times. Prints
/// "race-link ESCAPED" if a stat through `b` sees the outside inode (before any race), then
/// "race-stat ESCAPED" if a raced stat ever saw it ("refused" otherwise, with how many stats
/// saw the inside file), and "race-done" at the end; the caller checks the outside file's
/// mode and times for the calls that change it.
fn race(dir: &str, name: &str, outside: u64, rounds: u64) {
    let depth = dir.split('/').filter(|c| !c.is_empty()).count();
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(format!("{dir}/a")).expect("race dir");
    std::fs::write(format!("{dir}/a/{name}"), "inside\n").expect("race file");
    std::os::unix::fs::symlink(vec![".."; depth + 1].join("/"), format!("{dir}/b")).expect("race link");
    let reaches = |path: &str| {
        // SAFETY: all-zero is a valid stat; stat gets a live C string and buffer.
        let mut st: c::stat = unsafe { std::mem::zeroed() };
        unsafe { c::stat(cstr(path).as_ptr(), &mut st) == 0 && st.st_ino == outside }
    };
    // Without a race, through the link itself: the probe's own check of what it looks for.
    println!("race-link {}", if reaches(&format!("{dir}/b/{name}")) { "ESCAPED" } else { "refused" });
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let (a, b) = (cstr(&format!("{dir}/a")), cstr(&format!("{dir}/b")));
    let swapper = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                // SAFETY: renameat2 on two live C strings.
                unsafe {
                    c::syscall(c::SYS_renameat2, c::AT_FDCWD, a.as_ptr(), c::AT_FDCWD, b.as_ptr(), c::RENAME_EXCHANGE)
                };
            }
        })
    };
    let target = cstr(&format!("{dir}/a/{name}"));
    let (mut escaped, mut inside) = (false, 0u64);
    for _ in 0..rounds {
        // SAFETY: all-zero is a valid stat; the calls get live C strings and buffers.
        unsafe {
            let mut st: c::stat = std::mem::zeroed();
            if c::stat(target.as_ptr(), &mut st) == 0 {
                if st.st_ino == outside {
                    escaped = true;
                } else {
                    inside += 1;
                }
            }
            c::chmod(target.as_ptr(), 0o640);
            c::utimes(target.as_ptr(), std::ptr::null());
        }
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let _ = swapper.join();
    println!("race-stat {} {inside}", if escaped { "ESCAPED" } else { "refused" });
    println!("race-done");
}

/// The ids a guest process sees, and a child's: "pid ppid", then "child PID PPID", "fork RET",
/// "wait RET", one per line.
fn ids() {
    // SAFETY: plain system calls; the child only prints and exits.
    unsafe {
        println!("pid {} ppid {}", c::getpid(), c::getppid());
        let _ = std::io::stdout().flush();
        let pid = c::fork();
        if pid == 0 {
            println!("child {} {}", c::getpid(), c::getppid());
            let _ = std::io::stdout().flush();
            c::_exit(7);
        }
        let mut status = 0;
        let w = c::waitpid(pid, &mut status, 0);
        println!("fork {pid}\nwait {w} status {}", c::WEXITSTATUS(status));
    }
}

/// One line per escape attempt: "NAME refused ERRNO" or "NAME ESCAPED".
fn probe(outside: &str, host_pid: i32) {
    let secret = std::fs::read(outside).ok();
    let report = |name: &str, ok: bool| {
        let e = std::io::Error::last_os_error().raw_os_error().unwrap_or(0);
        if ok {
            println!("{name} ESCAPED");
        } else {
            println!("{name} refused {e}");
        }
    };
    let read_at = |dirfd: i32, path: &str| -> bool {
        let p = cstr(path);
        // SAFETY: a valid C string; the descriptor is closed below.
        let fd = unsafe { c::openat(dirfd, p.as_ptr(), c::O_RDONLY) };
        if fd < 0 {
            return false;
        }
        let mut buf = [0u8; 256];
        // SAFETY: `buf` is live.
        let k = unsafe { c::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
        // SAFETY: ours.
        unsafe { c::close(fd) };
        k > 0 && std::str::from_utf8(&buf[..k as usize]).is_ok_and(|s| s.contains("vmlab-secret"))
    };
    let base = std::path::Path::new(outside).file_name().and_then(|n| n.to_str()).unwrap_or("");
    report("stdin-dirfd", read_at(0, base));
    report("read-direct", secret.is_some_and(|s| String::from_utf8_lossy(&s).contains("vmlab-secret")));
    datagrams(outside, host_pid, &report);
    let ups = "../".repeat(20);
    let rel = format!("{ups}{}", outside.trim_start_matches('/'));
    report("dotdot", read_at(c::AT_FDCWD, &rel));
    // SAFETY: plain opens of valid C strings.
    let rootfd = unsafe { c::open(cstr("/").as_ptr(), c::O_RDONLY | c::O_DIRECTORY) };
    report("openat-rootfd-dotdot", read_at(rootfd, &rel));
    // SAFETY: as above.
    let tmpfd = unsafe { c::open(cstr("/tmp").as_ptr(), c::O_RDONLY | c::O_DIRECTORY) };
    report("openat-dirfd-dotdot", tmpfd >= 0 && read_at(tmpfd, &rel));
    let _ = std::fs::create_dir_all("/tmp");
    let _ = std::fs::remove_file("/tmp/abs-link");
    let _ = std::os::unix::fs::symlink(outside, "/tmp/abs-link");
    report("symlink-absolute", read_at(c::AT_FDCWD, "/tmp/abs-link"));
    let _ = std::fs::remove_file("/tmp/rel-link");
    let _ = std::os::unix::fs::symlink(&rel, "/tmp/rel-link");
    report("symlink-relative", read_at(c::AT_FDCWD, "/tmp/rel-link"));
    let _ = std::fs::remove_file("/tmp/dir-link");
    let _ = std::os::unix::fs::symlink(&ups, "/tmp/dir-link");
    report("symlink-dir", read_at(c::AT_FDCWD, &format!("/tmp/dir-link/{}", outside.trim_start_matches('/'))));
    report("proc-self-root", read_at(c::AT_FDCWD, &format!("/proc/self/root{outside}")));
    report("proc-1-root", read_at(c::AT_FDCWD, &format!("/proc/1/root{outside}")));
    report("proc-hostpid-root", read_at(c::AT_FDCWD, &format!("/proc/{host_pid}/root{outside}")));
    // SAFETY: chdir of a valid C string.
    for _ in 0..20 {
        unsafe { c::chdir(cstr("..").as_ptr()) };
    }
    report("chdir-dotdot", read_at(c::AT_FDCWD, outside.trim_start_matches('/')));
    // Each of these must fail; success is an escape.
    // SAFETY (all below): system calls with integer or valid pointer arguments; none can harm
    // this process if they fail, which is what the probe expects.
    unsafe {
        report("chroot", c::chroot(cstr("/tmp").as_ptr()) == 0);
        report("ptrace-traceme", c::ptrace(c::PTRACE_TRACEME, 0, 0, 0) == 0);
        report("seccomp-strict", c::syscall(c::SYS_seccomp, c::SECCOMP_SET_MODE_STRICT, 0, 0) == 0);
        report("prctl-seccomp", c::prctl(c::PR_SET_SECCOMP, 1, 0, 0, 0) == 0);
        report("kill-host", host_pid > 0 && c::kill(host_pid, 0) == 0);
        report("unshare", c::unshare(c::CLONE_NEWNS) == 0);
        report(
            "mount",
            c::mount(cstr("none").as_ptr(), cstr("/tmp").as_ptr(), cstr("tmpfs").as_ptr(), 0, std::ptr::null()) == 0,
        );
        report("open-by-handle", c::syscall(c::SYS_open_by_handle_at, rootfd, std::ptr::null::<u8>(), 0) >= 0);
        report("io-uring", c::syscall(c::SYS_io_uring_setup, 1, [0u8; 120].as_ptr()) >= 0);
        let s = c::socket(c::AF_UNIX, c::SOCK_STREAM, 0);
        let mut addr: c::sockaddr_un = std::mem::zeroed();
        addr.sun_family = c::AF_UNIX as u16;
        for (i, b) in b"\0vmlab-probe".iter().enumerate() {
            addr.sun_path[i] = *b as c::c_char;
        }
        let len = (2 + 12) as u32;
        report("abstract-socket", c::bind(s, (&addr as *const c::sockaddr_un).cast(), len) == 0);
        let target = cstr(&rel);
        report("unlink-outside", c::unlink(target.as_ptr()) == 0);
    }
}

/// Datagrams to sockets outside the root: the test binds outside.sock next to the secret file
/// and an abstract name with the host pid; by absolute path, `..` and sendmsg, and to the
/// abstract name. Run early: natively the probe's later attempts (seccomp strict mode) end it.
fn datagrams(outside: &str, host_pid: i32, report: &dyn Fn(&str, bool)) {
    // SAFETY: socket calls with valid pointers to local values.
    unsafe {
        let dir = std::path::Path::new(outside).parent().and_then(|d| d.to_str()).unwrap_or("/");
        let unix = |path: &[u8]| {
            let mut addr: c::sockaddr_un = std::mem::zeroed();
            addr.sun_family = c::AF_UNIX as u16;
            for (i, b) in path.iter().take(107).enumerate() {
                addr.sun_path[i] = *b as c::c_char;
            }
            (addr, (2 + path.len().min(107)) as u32)
        };
        let d = c::socket(c::AF_UNIX, c::SOCK_DGRAM, 0);
        let send_to = |path: &[u8]| {
            let (addr, len) = unix(path);
            c::sendto(d, b"x".as_ptr().cast(), 1, 0, (&addr as *const c::sockaddr_un).cast(), len) == 1
        };
        let abs_sock = format!("{dir}/outside.sock");
        let up_sock = format!("{}{}", "../".repeat(8), abs_sock.trim_start_matches('/'));
        report("sendto-unix-outside", send_to(abs_sock.as_bytes()) || send_to(up_sock.as_bytes()));
        let (mut addr, len) = unix(abs_sock.as_bytes());
        let mut iov = c::iovec { iov_base: b"x".as_ptr() as *mut c::c_void, iov_len: 1 };
        let mut msg: c::msghdr = std::mem::zeroed();
        msg.msg_name = (&mut addr as *mut c::sockaddr_un).cast();
        msg.msg_namelen = len;
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        report("sendmsg-unix-outside", c::sendmsg(d, &msg, 0) == 1);
        let name = format!("\0vmlab-probe-{host_pid}");
        report("sendto-abstract", send_to(name.as_bytes()));
    }
}

/// Reaches for a host process outside the guest through /proc (whatever the root: with
/// `--root /` its /proc is the host's) and by signal: each must be refused.
fn host_processes(host_pid: i32) {
    let report = |name: &str, ok: bool| {
        let e = std::io::Error::last_os_error().raw_os_error().unwrap_or(0);
        println!("{name} {} {e}", if ok { "ESCAPED" } else { "refused" });
    };
    report("proc-hostpid-environ", std::fs::read(format!("/proc/{host_pid}/environ")).is_ok());
    report(
        "proc-hostpid-mem",
        std::fs::OpenOptions::new().read(true).write(true).open(format!("/proc/{host_pid}/mem")).is_ok(),
    );
    report("proc-hostpid-cwd", std::fs::read_dir(format!("/proc/{host_pid}/cwd")).is_ok());
    // SAFETY: kill has no memory arguments; signal 0 only checks.
    report("kill-host", host_pid > 0 && unsafe { c::kill(host_pid, 0) } == 0);
}

/// Receives a descriptor with SCM_RIGHTS on stdin (a socket; the test sends the directory that
/// holds the secret file, outside the root) and reads the secret through it, directly and by
/// `..` from it: both must be refused.
fn received_directory(outside: &str) {
    let mut byte = [0u8; 1];
    let mut iov = c::iovec { iov_base: byte.as_mut_ptr().cast(), iov_len: 1 };
    let mut space = [0u64; 8];
    // SAFETY: an all-zero msghdr is valid; it points at live local buffers.
    let mut msg: c::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = space.as_mut_ptr().cast();
    msg.msg_controllen = std::mem::size_of_val(&space);
    // SAFETY: as above.
    let fd = unsafe {
        if c::recvmsg(0, &mut msg, 0) < 1 {
            -1
        } else {
            let cmsg = c::CMSG_FIRSTHDR(&msg);
            if cmsg.is_null() || (*cmsg).cmsg_type != c::SCM_RIGHTS {
                -1
            } else {
                std::ptr::read_unaligned(c::CMSG_DATA(cmsg) as *const i32)
            }
        }
    };
    println!("received {}", fd >= 0);
    let base = std::path::Path::new(outside);
    let name = base.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let dir = base.parent().and_then(|d| d.file_name()).and_then(|n| n.to_str()).unwrap_or("");
    let read_at = |path: &str| -> bool {
        let p = cstr(path);
        // SAFETY: a valid C string; the descriptor is closed below.
        let f = unsafe { c::openat(fd, p.as_ptr(), c::O_RDONLY) };
        if f < 0 {
            return false;
        }
        let mut buf = [0u8; 64];
        // SAFETY: `buf` is live; `f` is ours.
        let k = unsafe { c::read(f, buf.as_mut_ptr().cast(), buf.len()) };
        // SAFETY: ours.
        unsafe { c::close(f) };
        k > 0 && buf[..k as usize].starts_with(b"vmlab-secret")
    };
    let report = |what: &str, ok: bool| {
        let e = std::io::Error::last_os_error().raw_os_error().unwrap_or(0);
        println!("{what} {} {e}", if ok { "ESCAPED" } else { "refused" });
    };
    report("scm-rights-dirfd", read_at(name));
    report("scm-rights-dotdot", read_at(&format!("../{dir}/{name}")));
    // Metadata, which Landlock does not cover: stat and chmod through the descriptor and by
    // `..` from it, and stat relative to it as the working directory.
    let stat_at = |base: i32, path: &str| -> bool {
        let p = cstr(path);
        // SAFETY: all-zero is a valid stat; a valid C string.
        let mut st: c::stat = unsafe { std::mem::zeroed() };
        unsafe { c::fstatat(base, p.as_ptr(), &mut st, 0) == 0 }
    };
    report("scm-rights-stat", stat_at(fd, name));
    report("scm-rights-dotdot-stat", stat_at(fd, &format!("../{dir}/{name}")));
    let p = cstr(name);
    // SAFETY: a valid C string.
    report("scm-rights-chmod", unsafe { c::fchmodat(fd, p.as_ptr(), 0o640, 0) } == 0);
    // SAFETY: fchdir takes no memory.
    report("scm-rights-fchdir-stat", unsafe { c::fchdir(fd) } == 0 && stat_at(c::AT_FDCWD, name));
}
