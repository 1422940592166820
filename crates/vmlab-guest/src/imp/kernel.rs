//! The guest kernel proper: what to do with one guest system call, whatever trapped it.
//!
//! [`Kernel::entry`] decides, from the call's registers, whether the guest kernel answers it
//! itself ([`Decision::Emulate`]) or forwards it to the host, perhaps with translated arguments
//! ([`Decision::Forward`]); [`Kernel::complete`] translates a forwarded call's result. The
//! mechanisms (`trace.rs`, `notify.rs`) only deliver calls here and carry out the decision.

use super::path::{Base, Root, Who};
use super::{mem, meta};
use crate::calls::{self, Follow, Handling, PathArg};
use crate::Config;
use libc as c;
use std::collections::HashMap;

/// Bytes of guest memory the guest kernel maps into each guest thread for rewritten
/// arguments: two paths and a socket address (a page each), then the exec area.
pub(crate) const SCRATCH_LEN: u64 = EXEC_AREA + EXEC_AREA_LEN;

/// Where in the scratch memory an exec under a root gets its argument vector and the guest
/// kernel's strings (`exec.rs`), and how many bytes: room for 130,000 arguments. The pages
/// are touched only by such an exec, which replaces them with the new image when it succeeds.
pub(crate) const EXEC_AREA: u64 = 3 * 4096;
pub(crate) const EXEC_AREA_LEN: u64 = 1 << 20;

/// A system call's number and arguments.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Call {
    pub nr: i64,
    pub args: [u64; 6],
}

/// What happens to a call.
#[derive(Debug)]
pub(crate) enum Decision {
    /// The guest kernel answers: the call returns this (a negative errno on failure).
    Emulate(i64),
    /// The host runs the call, with these arguments if they changed, then `post` runs.
    Forward { args: Option<[u64; 6]>, post: Post },
    /// The guest kernel needs scratch memory in the calling thread first.
    NeedScratch,
}

/// What to do with a forwarded call's result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Post {
    None,
    /// The result is a host pid (fork, wait4, getpgid): make it a guest pid.
    Pid,
    /// waitid's siginfo at this address holds a host pid.
    Waitid(u64),
    /// rt_sigtimedwait wrote the siginfo at this address: its sender's pid is a host pid.
    Siginfo(u64),
    /// getcwd wrote a host path into the buffer at this address.
    Getcwd(u64),
    /// execve: on success the arguments registers belong to the new image: leave them.
    Exec,
    /// getsockname/getpeername (`peer`) of descriptor `fd` wrote an address at `addr` (a
    /// buffer of `size` bytes) and its length at `len_at`: an AF_UNIX path in it is a host path.
    Sockname {
        peer: bool,
        fd: i32,
        addr: u64,
        len_at: u64,
        size: u32,
    },
    /// accept/accept4 wrote the peer's address at `addr` (a buffer of `size` bytes) and its
    /// full length at `len_at`; the new descriptor's peer is asked again (as for getpeername),
    /// since an AF_UNIX path in it is a host path.
    Accept {
        addr: u64,
        len_at: u64,
        size: u32,
    },
    /// recvfrom/recvmsg wrote the sender's address at `addr` (a buffer of `size` bytes) and
    /// its full length at `len_at`: an AF_UNIX path in it is a host path.
    Sender {
        addr: u64,
        len_at: u64,
        size: u32,
    },
    /// recvmmsg of the vector at this address: each message's name buffer and its size, as
    /// the call was made (the host overwrites the sizes with the addresses' lengths).
    Senders(u64, Vec<(u64, u32)>),
    /// sendmmsg run as a sendmsg of its first message (the vector at this address): on
    /// success that message's msg_len gets the result, and the call returns 1.
    Sendmmsg(u64),
}

/// A guest process's credentials: real, effective, saved.
#[derive(Clone, Copy, Debug)]
struct Creds {
    uid: [u32; 3],
    gid: [u32; 3],
}

/// A guest process (thread group).
#[derive(Clone, Debug)]
struct Proc {
    /// Host pid of the parent process; 0 for guest pid 1.
    parent: i32,
    creds: Creds,
    alive: bool,
}

/// The guest kernel's state.
pub(crate) struct Kernel {
    /// The guest root; `None` when it is `/`.
    pub root: Option<Root>,
    /// `--strace`.
    pub strace: bool,
    hostname: Vec<u8>,
    domainname: Vec<u8>,
    default_creds: Creds,
    /// Host tid to guest tid, and back. Guest ids are never reused.
    to_guest: HashMap<i32, i32>,
    to_host: HashMap<i32, i32>,
    next_id: i32,
    procs: HashMap<i32, Proc>,
    /// Host tid to host tgid.
    tgid: HashMap<i32, i32>,
    /// Host pid of guest pid 1.
    pub init: i32,
    /// The guest shares the host's IPC namespace (the guest kernel could not make one): the
    /// SysV IPC and POSIX message queue calls are refused (EPERM).
    pub refuse_ipc: bool,
    /// Calls handled.
    pub trapped: u64,
}

fn neg(errno: i32) -> i64 {
    -(errno as i64)
}

impl Kernel {
    /// A guest kernel for `config`.
    pub fn new(config: &Config) -> Result<Kernel, String> {
        let root = if config.root == std::path::Path::new("/") { None } else { Some(Root::open(&config.root)?) };
        let root = match root {
            Some(r) if r.host == b"/" => None,
            r => r,
        };
        Ok(Kernel {
            root,
            strace: config.strace,
            hostname: config.hostname.as_bytes().to_vec(),
            domainname: b"(none)".to_vec(),
            default_creds: Creds { uid: [config.uid; 3], gid: [config.gid; 3] },
            to_guest: HashMap::new(),
            to_host: HashMap::new(),
            next_id: 1,
            procs: HashMap::new(),
            tgid: HashMap::new(),
            init: 0,
            refuse_ipc: false,
            trapped: 0,
        })
    }

    /// Registers a new host thread `tid` (of process `tgid`, whose parent is host pid
    /// `parent`); the first one becomes guest pid 1.
    pub fn add_thread(&mut self, tid: i32, tgid: i32, parent: i32) {
        if self.init == 0 {
            self.init = tgid;
        }
        self.guest_id(tgid);
        self.guest_id(tid);
        self.tgid.insert(tid, tgid);
        if tid == tgid || !self.procs.contains_key(&tgid) {
            let creds = self.procs.get(&parent).map_or(self.default_creds, |p| p.creds);
            let parent = if tgid == self.init { 0 } else { parent };
            self.procs.insert(tgid, Proc { parent, creds, alive: true });
        }
    }

    /// The host tgid of guest thread `tid`.
    pub fn tgid_of(&self, tid: i32) -> i32 {
        self.tgid.get(&tid).copied().unwrap_or(tid)
    }

    /// Forgets thread `tid`; when it was its process's last, the process is dead and its
    /// children are the guest init's.
    pub fn remove_thread(&mut self, tid: i32) {
        let Some(tgid) = self.tgid.remove(&tid) else {
            return;
        };
        if self.tgid.values().any(|&t| t == tgid) {
            return;
        }
        if let Some(p) = self.procs.get_mut(&tgid) {
            p.alive = false;
        }
        let init = self.init;
        for p in self.procs.values_mut() {
            if p.parent == tgid {
                p.parent = init;
            }
        }
    }

    /// Host tgids of the living guest processes.
    pub fn live_processes(&self) -> Vec<i32> {
        let mut v: Vec<i32> = self.procs.iter().filter(|(_, p)| p.alive).map(|(&h, _)| h).collect();
        v.sort_unstable();
        v
    }

    /// The guest id of host thread or process `host`, allocating one for a new host id.
    pub fn guest_id(&mut self, host: i32) -> i32 {
        if let Some(&g) = self.to_guest.get(&host) {
            return g;
        }
        let g = self.next_id;
        self.next_id += 1;
        self.to_guest.insert(host, g);
        self.to_host.insert(g, host);
        g
    }

    /// Makes the sender's pid in `info` (a siginfo, its first 24 bytes at least) a guest pid
    /// where the host filled it in (kill, tkill, tgkill, a message queue's notification, a
    /// child's SIGCHLD): 0 for a sender outside the guest, as a pid namespace shows one. A pid
    /// the sender gave itself (sigqueue's SI_QUEUE and the other negative codes) is already
    /// the guest's. Whether `info` changed.
    pub fn guest_siginfo(&self, info: &mut [u8]) -> bool {
        const SI_USER: i32 = 0;
        const SI_MESGQ: i32 = -3;
        const SI_TKILL: i32 = -6;
        if info.len() < 24 {
            return false;
        }
        let word = |i: usize| i32::from_ne_bytes([info[i], info[i + 1], info[i + 2], info[i + 3]]);
        let (signo, code, pid) = (word(0), word(8), word(16));
        let from_host =
            matches!(code, SI_USER | SI_MESGQ | SI_TKILL) || (signo == c::SIGCHLD && (1..=6).contains(&code));
        if !from_host || pid <= 0 {
            return false;
        }
        let guest = self.guest_of(pid).unwrap_or(0);
        info[16..20].copy_from_slice(&guest.to_ne_bytes());
        guest != pid
    }

    /// The guest id of `host` if it is a guest thread or process.
    pub fn guest_of(&self, host: i32) -> Option<i32> {
        self.to_guest.get(&host).copied()
    }

    /// The host id of guest id `guest`.
    pub fn host_of(&self, guest: i32) -> Option<i32> {
        self.to_host.get(&guest).copied()
    }

    /// Guest process `tgid`'s real and effective uid, then its real and effective gid.
    pub fn ids_of(&mut self, tgid: i32) -> [u32; 4] {
        let cr = *self.creds_mut(tgid);
        [cr.uid[0], cr.uid[1], cr.gid[0], cr.gid[1]]
    }

    /// Gives process `tgid`, unless the guest kernel knows it already, a copy of the ids of its
    /// parent, host pid `parent` (the configured ids if the parent is unknown).
    pub fn inherit_creds(&mut self, tgid: i32, parent: i32) {
        if !self.procs.contains_key(&tgid) {
            let creds = self.procs.get(&parent).map_or(self.default_creds, |p| p.creds);
            self.procs.insert(tgid, Proc { parent, creds, alive: true });
        }
    }

    fn creds_mut(&mut self, tgid: i32) -> &mut Creds {
        let d = self.default_creds;
        &mut self.procs.entry(tgid).or_insert(Proc { parent: 0, creds: d, alive: true }).creds
    }

    /// Decides what happens to `call` made by host thread `tid`, which has scratch memory at
    /// `scratch` if any.
    pub fn entry(&mut self, tid: i32, call: &Call, scratch: Option<u64>) -> Decision {
        self.trapped += 1;
        let tgid = self.tgid_of(tid);
        let fwd = Decision::Forward { args: None, post: Post::None };
        match call.nr {
            c::SYS_getpid => return Decision::Emulate(self.guest_id(tgid) as i64),
            c::SYS_gettid => return Decision::Emulate(self.guest_id(tid) as i64),
            c::SYS_getppid => {
                let parent = self.procs.get(&tgid).map_or(0, |p| p.parent);
                let g = if parent == 0 { 0 } else { self.guest_of(parent).unwrap_or(1) };
                return Decision::Emulate(g as i64);
            }
            _ => {}
        }
        if let Some(d) = self.identity(tid, tgid, call) {
            return d;
        }
        if let Some(e) = refusal(call) {
            return Decision::Emulate(e);
        }
        if self.refuse_ipc && calls::IPC_CALLS.contains(&call.nr) {
            return Decision::Emulate(neg(c::EPERM));
        }
        if calls::is_pid_call(call.nr) {
            return self.pid_call(tid, call);
        }
        if calls::is_clock_call(call.nr) {
            return self.clock_call(call);
        }
        if call.nr == c::SYS_rt_sigtimedwait && call.args[1] != 0 {
            return Decision::Forward { args: None, post: Post::Siginfo(call.args[1]) };
        }
        match call.nr {
            c::SYS_execve | c::SYS_execveat if self.root.is_none() => {
                return Decision::Forward { args: None, post: Post::Exec };
            }
            _ => {}
        }
        if self.root.is_some() {
            return self.rooted(tid, tgid, call, scratch);
        }
        fwd
    }

    /// Identity calls: ids, uname, hostname.
    pub fn identity(&mut self, tid: i32, tgid: i32, call: &Call) -> Option<Decision> {
        let a = call.args;
        let cr = *self.creds_mut(tgid);
        let emulate = |v: i64| Some(Decision::Emulate(v));
        match call.nr {
            c::SYS_getuid => emulate(cr.uid[0] as i64),
            c::SYS_geteuid => emulate(cr.uid[1] as i64),
            c::SYS_getgid => emulate(cr.gid[0] as i64),
            c::SYS_getegid => emulate(cr.gid[1] as i64),
            c::SYS_getresuid | c::SYS_getresgid => {
                let ids = if call.nr == c::SYS_getresuid { cr.uid } else { cr.gid };
                for (i, id) in ids.iter().enumerate() {
                    if let Err(e) = mem::write(tid, a[i], &id.to_ne_bytes()) {
                        return emulate(neg(e));
                    }
                }
                emulate(0)
            }
            c::SYS_setuid | c::SYS_setgid | c::SYS_setreuid | c::SYS_setregid | c::SYS_setresuid | c::SYS_setresgid => {
                let is_uid = matches!(call.nr, c::SYS_setuid | c::SYS_setreuid | c::SYS_setresuid);
                let privileged = cr.uid[1] == 0;
                let cur = if is_uid { cr.uid } else { cr.gid };
                let want: [Option<u32>; 3] = match call.nr {
                    c::SYS_setuid | c::SYS_setgid if privileged => [Some(a[0] as u32); 3],
                    c::SYS_setuid | c::SYS_setgid => [None, Some(a[0] as u32), None],
                    c::SYS_setreuid | c::SYS_setregid => [id_arg(a[0]), id_arg(a[1]), None],
                    _ => [id_arg(a[0]), id_arg(a[1]), id_arg(a[2])],
                };
                if !privileged && want.iter().flatten().any(|w| !cur.contains(w)) {
                    return emulate(neg(c::EPERM));
                }
                let creds = self.creds_mut(tgid);
                let ids = if is_uid { &mut creds.uid } else { &mut creds.gid };
                for (slot, w) in ids.iter_mut().zip(want) {
                    if let Some(w) = w {
                        *slot = w;
                    }
                }
                emulate(0)
            }
            c::SYS_setfsuid => emulate(cr.uid[1] as i64),
            c::SYS_setfsgid => emulate(cr.gid[1] as i64),
            c::SYS_uname => {
                // SAFETY: utsname is plain bytes; all-zero is valid and uname fills it.
                let mut u: c::utsname = unsafe { std::mem::zeroed() };
                // SAFETY: `u` is a valid out-pointer.
                unsafe { c::uname(&mut u) };
                fill(&mut u.nodename, &self.hostname);
                fill(&mut u.domainname, &self.domainname);
                // SAFETY: utsname is a repr(C) struct of byte arrays: viewing it as bytes is sound.
                let bytes = unsafe {
                    std::slice::from_raw_parts(
                        (&u as *const c::utsname).cast::<u8>(),
                        std::mem::size_of::<c::utsname>(),
                    )
                };
                emulate(match mem::write(tid, a[0], bytes) {
                    Ok(()) => 0,
                    Err(e) => neg(e),
                })
            }
            c::SYS_sethostname | c::SYS_setdomainname => {
                if cr.uid[1] != 0 {
                    return emulate(neg(c::EPERM));
                }
                if a[1] > 64 {
                    return emulate(neg(c::EINVAL));
                }
                match mem::read(tid, a[0], a[1] as usize) {
                    Ok(name) if call.nr == c::SYS_sethostname => self.hostname = name,
                    Ok(name) => self.domainname = name,
                    Err(e) => return emulate(neg(e)),
                }
                emulate(0)
            }
            _ => None,
        }
    }

    /// A guest pid argument to a host pid: 0 and negative (process-group) values keep their
    /// meaning; a pid outside the guest is ESRCH. A number that is no guest id but the host
    /// tid of a living guest thread names that thread: the tid fields clone writes (which C
    /// libraries keep, and pass to tgkill, sched_setaffinity, ...) hold host tids, and the
    /// kernel's PI and robust futexes need them to.
    fn pid_arg(&self, v: u64) -> Result<u64, i32> {
        let pid = v as i32;
        match pid {
            0 => Ok(v),
            p if p > 0 => match self.host_of(p) {
                Some(h) => Ok(h as u64),
                None if self.tgid.contains_key(&p) => Ok(v),
                None => Err(c::ESRCH),
            },
            -1 => Err(c::EINVAL),
            p => self.host_of(-p).map(|h| (-h) as u32 as u64).ok_or(c::ESRCH),
        }
    }

    fn pid_call(&mut self, tid: i32, call: &Call) -> Decision {
        let mut a = call.args;
        let mut post = Post::None;
        let res: Result<(), i32> = (|| {
            match call.nr {
                c::SYS_kill if a[0] as i32 == -1 => Err(0),
                // kill(0, sig): the caller's process group, which guest pid 1 shares with the
                // guest kernel and whoever started it: only its guest members.
                c::SYS_kill if a[0] as i32 == 0 => Err(-1),
                c::SYS_kill | c::SYS_rt_sigqueueinfo => {
                    a[0] = self.pid_arg(a[0])?;
                    Ok(())
                }
                c::SYS_tkill | c::SYS_pidfd_open => {
                    if (a[0] as i32) <= 0 {
                        return Err(c::EINVAL);
                    }
                    a[0] = self.pid_arg(a[0])?;
                    Ok(())
                }
                c::SYS_tgkill | c::SYS_rt_tgsigqueueinfo => {
                    if (a[0] as i32) <= 0 || (a[1] as i32) <= 0 {
                        return Err(c::EINVAL);
                    }
                    a[0] = self.pid_arg(a[0])?;
                    a[1] = self.pid_arg(a[1])?;
                    Ok(())
                }
                c::SYS_wait4 => {
                    if a[0] as i32 != -1 {
                        a[0] = self.pid_arg(a[0])?;
                    }
                    post = Post::Pid;
                    Ok(())
                }
                c::SYS_waitid => {
                    // P_PID = 1, P_PGID = 2.
                    if (a[0] == 1 || a[0] == 2) && a[1] as i32 != 0 {
                        a[1] = self.pid_arg(a[1])?;
                    }
                    post = Post::Waitid(a[2]);
                    Ok(())
                }
                c::SYS_getpgid | c::SYS_getsid => {
                    a[0] = self.pid_arg(a[0])?;
                    post = Post::Pid;
                    Ok(())
                }
                c::SYS_getpgrp | c::SYS_fork | c::SYS_vfork => {
                    post = Post::Pid;
                    Ok(())
                }
                c::SYS_setpgid => {
                    a[0] = self.pid_arg(a[0])?;
                    a[1] = self.pid_arg(a[1])?;
                    Ok(())
                }
                c::SYS_getpriority | c::SYS_setpriority | c::SYS_ioprio_get | c::SYS_ioprio_set => {
                    // PRIO_PROCESS / IOPRIO_WHO_PROCESS (0 / 1) and the group kinds name pids.
                    let names_pid = if matches!(call.nr, c::SYS_getpriority | c::SYS_setpriority) {
                        a[0] <= 1
                    } else {
                        a[0] == 1 || a[0] == 2
                    };
                    if names_pid && a[1] as i32 > 0 {
                        a[1] = self.pid_arg(a[1])?;
                    }
                    Ok(())
                }
                c::SYS_clone => {
                    a[0] &= !(c::CLONE_UNTRACED as u64);
                    post = Post::Pid;
                    Ok(())
                }
                // sched_*, prlimit64: the pid is the first argument, 0 meaning the caller. The
                // host looks a negative pid up (ESRCH) for the affinity calls and prlimit64,
                // and refuses it first (EINVAL) for the others.
                _ => {
                    if (a[0] as i32) < 0 {
                        let looked_up =
                            matches!(call.nr, c::SYS_sched_getaffinity | c::SYS_sched_setaffinity | c::SYS_prlimit64);
                        return Err(if looked_up { c::ESRCH } else { c::EINVAL });
                    }
                    a[0] = self.pid_arg(a[0])?;
                    Ok(())
                }
            }
        })();
        match res {
            Err(marker @ (0 | -1)) => {
                // kill(-1, sig): every guest process but the caller; kill(0, sig): every guest
                // process in the caller's process group.
                let me = self.tgid_of(tid);
                let sig = call.args[1] as i32;
                // SAFETY: getpgid has no memory arguments.
                let group = unsafe { c::getpgid(me) };
                let mut n = 0;
                for p in self.live_processes() {
                    // SAFETY: getpgid and kill have no memory arguments.
                    let target = if marker == 0 { p != me } else { (unsafe { c::getpgid(p) }) == group };
                    if target && unsafe { c::kill(p, sig) } == 0 {
                        n += 1;
                    }
                }
                Decision::Emulate(if n > 0 { 0 } else { neg(c::ESRCH) })
            }
            Err(e) => Decision::Emulate(neg(e)),
            Ok(()) => Decision::Forward { args: (a != call.args).then_some(a), post },
        }
    }

    /// clock_gettime, clock_getres, clock_nanosleep or timer_create of a CPU-time clock that
    /// names a process or thread: the pid in the clock id is a guest pid (or the host tid a C
    /// library keeps for a thread, see [`Kernel::pid_arg`]), made a host pid. glibc's
    /// pthread_getcpuclockid takes the thread's tid from its thread descriptor (a host tid,
    /// from clone or set_tid_address), and clock_getcpuclockid takes a pid from getpid: without
    /// this the host looked up guest pid 1 as its own pid 1 (EINVAL).
    /// A pid outside the guest is EINVAL, as the host answers a clock id of a pid it does
    /// not know.
    fn clock_call(&self, call: &Call) -> Decision {
        const CLOCKFD: i32 = 3;
        let id = call.args[0] as i32;
        let unchanged = Decision::Forward { args: None, post: Post::None };
        if id >= 0 || id & 7 == CLOCKFD {
            return unchanged;
        }
        let pid = !(id >> 3);
        if pid == 0 {
            return unchanged;
        }
        match self.pid_arg(pid as u32 as u64) {
            Ok(host) => {
                let mut a = call.args;
                a[0] = ((!(host as i32) << 3) | (id & 7)) as u32 as u64;
                Decision::Forward { args: (a != call.args).then_some(a), post: Post::None }
            }
            Err(_) => Decision::Emulate(neg(c::EINVAL)),
        }
    }

    /// Calls that take paths, descriptors or socket addresses, under a root other than `/`.
    fn rooted(&mut self, tid: i32, tgid: i32, call: &Call, scratch: Option<u64>) -> Decision {
        let a = call.args;
        match call.nr {
            c::SYS_getcwd => return Decision::Forward { args: None, post: Post::Getcwd(a[0]) },
            c::SYS_getsockname | c::SYS_getpeername => {
                // The buffer's size, which the host overwrites with the address's length.
                let size = mem::read(tid, a[2], 4).map_or(0, |b| u32::from_ne_bytes([b[0], b[1], b[2], b[3]]));
                let peer = call.nr == c::SYS_getpeername;
                return Decision::Forward {
                    args: None,
                    post: Post::Sockname { peer, fd: a[0] as i32, addr: a[1], len_at: a[2], size },
                };
            }
            nr if calls::is_peer_address_call(nr) => {
                return Decision::Forward { args: None, post: peer_address_post(tid, call) };
            }
            c::SYS_fchdir => {
                return match self.fchdir_refusal(tid, a[0] as i32) {
                    Some(e) => Decision::Emulate(e),
                    None => Decision::Forward { args: None, post: Post::None },
                };
            }
            c::SYS_bind | c::SYS_connect | c::SYS_sendto | c::SYS_sendmsg | c::SYS_sendmmsg => {
                return self.sockaddr(tid, tgid, call, scratch)
            }
            _ => {}
        }
        if matches!(call.nr, c::SYS_execve | c::SYS_execveat) {
            if let Some(d) = self.exec_in_root(tid, tgid, call, scratch) {
                return d;
            }
        }
        let specs = calls::path_args(call.nr);
        if specs.is_empty() {
            return Decision::Forward { args: None, post: Post::None };
        }
        if calls::is_metadata(call.nr) {
            if let Some(d) = self.metadata(tid, tgid, call, &specs[0]) {
                return d;
            }
        }
        let post = if matches!(call.nr, c::SYS_execve | c::SYS_execveat) { Post::Exec } else { Post::None };
        let mut args = a;
        let mut paths: Vec<(usize, Vec<u8>)> = Vec::new();
        for spec in specs {
            match self.path_arg(tid, tgid, call, spec) {
                // The descriptor itself (an empty path with AT_EMPTY_PATH): the host still gets
                // an empty path the guest cannot change, not the guest's string, which another
                // thread could turn into a path between this check and the host's use.
                Ok(None) if a[spec.path] != 0 => paths.push((spec.path, Vec::new())),
                Ok(None) => {}
                Ok(Some(host)) => {
                    if let Some(d) = spec.dirfd {
                        args[d] = c::AT_FDCWD as u32 as u64;
                    }
                    paths.push((spec.path, host));
                }
                Err(e) => return Decision::Emulate(neg(e)),
            }
        }
        if paths.is_empty() {
            return Decision::Forward { args: None, post };
        }
        let Some(scratch) = scratch else {
            return Decision::NeedScratch;
        };
        for (i, (arg, host)) in paths.into_iter().enumerate() {
            let at = scratch + 4096 * i as u64;
            let mut bytes = host;
            bytes.push(0);
            if bytes.len() > 4096 {
                return Decision::Emulate(neg(c::ENAMETOOLONG));
            }
            if let Err(e) = mem::poke(tid, at, &bytes) {
                return Decision::Emulate(neg(e));
            }
            args[arg] = at;
        }
        Decision::Forward { args: Some(args), post }
    }

    /// The host path, inside the root, of path argument `spec` of `call`; None when the call
    /// acts on a descriptor itself (an empty path with AT_EMPTY_PATH, futimens).
    fn path_arg(&self, tid: i32, tgid: i32, call: &Call, spec: &PathArg) -> Result<Option<Vec<u8>>, i32> {
        let a = call.args;
        let ptr = a[spec.path];
        if ptr == 0 && call.nr == c::SYS_utimensat {
            return Ok(None);
        }
        let guest = mem::read_cstr(tid, ptr, 4096)?;
        if guest.is_empty() && spec.empty_flag.is_some_and(|f| a[f] & c::AT_EMPTY_PATH as u64 != 0) {
            return Ok(None);
        }
        let base = match spec.dirfd.map(|i| a[i] as i32) {
            None | Some(c::AT_FDCWD) => Base::Cwd,
            Some(fd) => Base::Fd(fd),
        };
        let to_host = |g: i32| self.to_host.get(&g).copied();
        let who = Who { tid, tgid, host_pid: &to_host };
        let root = self.root.as_ref().ok_or(c::EINVAL)?;
        root.resolve(&who, base, &guest, follows(spec, a)).map(Some)
    }

    /// fchdir under the root: -EACCES when descriptor `fd` of thread `tid` is a directory
    /// outside the root (received from outside), -EBADF when it is not open; None lets the host
    /// run the call. Checked when the call is made: a second guest thread could swap the
    /// number for another descriptor before the host runs it, but only for one it already has.
    pub(crate) fn fchdir_refusal(&self, tid: i32, fd: i32) -> Option<i64> {
        let root = self.root.as_ref()?;
        match std::fs::read_link(format!("/proc/{tid}/fd/{fd}")) {
            Ok(p) if root.guest_path(std::os::unix::ffi::OsStrExt::as_bytes(p.as_os_str())).is_some() => None,
            Ok(_) => Some(neg(c::EACCES)),
            Err(_) => Some(neg(c::EBADF)),
        }
    }

    /// For the mechanisms that leave paths to chroot (seccomp-notify, sigsys, user-dispatch):
    /// a metadata call under the root relative to a directory descriptor. chroot keeps `..`
    /// inside the root from the working directory and the root, not from a directory received
    /// from outside, so the guest kernel runs such a call itself on a descriptor, as for the
    /// ptrace mechanisms (refused when the base is outside the root); the result, or None to
    /// let the host run the call (the working directory as base, or reading a descriptor's own
    /// metadata).
    pub(crate) fn metadata_at_descriptor(&mut self, tid: i32, tgid: i32, call: &Call) -> Option<i64> {
        self.root.as_ref()?;
        if !calls::is_metadata(call.nr) {
            return None;
        }
        let spec = calls::path_args(call.nr).first()?;
        let dirfd = call.args[spec.dirfd?] as i32;
        if dirfd == c::AT_FDCWD {
            return None;
        }
        match self.metadata(tid, tgid, call, spec)? {
            Decision::Emulate(r) => Some(r),
            _ => None,
        }
    }

    /// A metadata call under the root, run by the guest kernel on a descriptor (`meta.rs`);
    /// None to rewrite its path instead (paths in the root's procfs, whose magic links the
    /// guest kernel has checked, and calls that only read a descriptor's metadata).
    fn metadata(&mut self, tid: i32, tgid: i32, call: &Call, spec: &PathArg) -> Option<Decision> {
        let a = call.args;
        let root = self.root.as_ref()?;
        let object = match self.path_arg(tid, tgid, call, spec) {
            Err(e) => Err(e),
            Ok(Some(host)) if root.in_procfs(&host) => return None,
            Ok(Some(host)) => root.open_in_root(&host, follows(spec, a)),
            // The descriptor itself: reading its metadata reveals no more than the descriptor
            // does; changing it needs the descriptor to be inside the root, checked on the
            // guest kernel's own copy (the guest could swap the number meanwhile).
            Ok(None) if !calls::changes_metadata(call.nr) => return None,
            Ok(None) => match spec.dirfd.map(|i| a[i] as i32) {
                Some(c::AT_FDCWD) | None => {
                    let to_host = |g: i32| self.to_host.get(&g).copied();
                    let who = Who { tid, tgid, host_pid: &to_host };
                    root.resolve(&who, Base::Cwd, b".", true).and_then(|h| root.open_in_root(&h, true))
                }
                Some(fd) => super::notify::take_fd(tgid, fd)
                    .map_err(|_| c::EBADF)
                    .and_then(|fd| root.check_fd(&fd).map(|()| fd)),
            },
        };
        Some(Decision::Emulate(match object {
            Ok(fd) => meta::run(tid, call.nr, a, &fd),
            Err(e) => neg(e),
        }))
    }

    /// bind/connect/sendto/sendmsg/sendmmsg under a root: an AF_UNIX path is contained in the
    /// root; abstract names are refused. Whatever address the host uses is a copy in the
    /// thread's scratch page, which the guest cannot write: an address left in guest memory
    /// (even one that was not AF_UNIX when checked) could be changed by another guest thread
    /// before the host reads it. sendmmsg sends its first message only, as sendmsg.
    fn sockaddr(&mut self, tid: i32, tgid: i32, call: &Call, scratch: Option<u64>) -> Decision {
        let a = call.args;
        let unchanged = Decision::Forward { args: None, post: Post::None };
        // The msghdr whose copy the host gets (sendmsg, sendmmsg), and the address.
        let (hdr_at, ptr, len) = match call.nr {
            c::SYS_sendto if a[4] == 0 => return unchanged,
            c::SYS_sendto => (None, a[4], a[5]),
            c::SYS_sendmmsg if a[2] == 0 => return unchanged,
            c::SYS_sendmsg | c::SYS_sendmmsg => match read_msg_name(tid, a[1]) {
                Some((p, l)) => (Some(a[1]), p, l),
                None => return Decision::Emulate(neg(c::EFAULT)),
            },
            _ => (None, a[1], a[2]),
        };
        let new = if ptr == 0 {
            None
        } else {
            if len as usize > std::mem::size_of::<c::sockaddr_storage>() {
                return Decision::Emulate(neg(c::EINVAL));
            }
            // Read once: what is checked is what the host gets.
            let raw = match mem::read(tid, ptr, len as usize) {
                Ok(raw) => raw,
                Err(e) => return Decision::Emulate(neg(e)),
            };
            match self.unix_dest(tid, tgid, &raw, call.nr != c::SYS_bind) {
                // A socket the host would find by its path: the guest kernel reaches it itself
                // through a descriptor (a path string handed to the host could be raced).
                Ok(Some(new)) if call.nr != c::SYS_bind => {
                    return Decision::Emulate(self.unix_path_call(tid, tgid, call, &new[2..new.len() - 1], hdr_at))
                }
                Ok(Some(new)) => Some(new),
                Ok(None) => Some(raw),
                Err(e) => return Decision::Emulate(neg(e)),
            }
        };
        let Some(scratch) = scratch else {
            return Decision::NeedScratch;
        };
        // The address, then (sendmsg, sendmmsg) a copy of the msghdr that names it.
        let at = scratch + 2 * 4096;
        if let Some(new) = &new {
            if let Err(e) = mem::poke(tid, at, new) {
                return Decision::Emulate(neg(e));
            }
        }
        let (name, name_len) = new.as_ref().map_or((0, 0), |n| (at, n.len() as u64));
        let mut args = a;
        let mut post = Post::None;
        match hdr_at {
            Some(hdr_at) => {
                let Ok(mut hdr) = mem::read(tid, hdr_at, MSGHDR_LEN) else {
                    return Decision::Emulate(neg(c::EFAULT));
                };
                hdr[..8].copy_from_slice(&name.to_ne_bytes());
                hdr[8..12].copy_from_slice(&(name_len as u32).to_ne_bytes());
                let copy_at = at + 256;
                if let Err(e) = mem::poke(tid, copy_at, &hdr) {
                    return Decision::Emulate(neg(e));
                }
                args[1] = copy_at;
                if call.nr == c::SYS_sendmmsg {
                    args[2] = args[3];
                    post = Post::Sendmmsg(a[1]);
                }
            }
            None if call.nr == c::SYS_sendto => {
                args[4] = name;
                args[5] = name_len;
            }
            None => {
                args[1] = name;
                args[2] = name_len;
            }
        }
        Decision::Forward { args: Some(args), post }
    }

    /// connect, sendto, sendmsg or sendmmsg (its first message) of thread `tid` to the AF_UNIX
    /// socket at `host` (resolved in the root), run by the guest kernel on its own copy of the
    /// guest's socket (pidfd_getfd): the host's path lookup of a string could be raced (a
    /// directory on the way swapped for a symbolic link out of the root), so the guest kernel
    /// opens the socket file with openat2(O_PATH, RESOLVE_IN_ROOT) and names it to the host as
    /// /proc/self/fd/N, which leads to that very file. The call does not block (a full
    /// backlog or receive queue is EAGAIN) and never raises SIGPIPE in the guest kernel (the
    /// guest thread gets it instead); a sendmsg with ancillary data is refused (EOPNOTSUPP).
    /// The result, or -errno.
    fn unix_path_call(&self, tid: i32, tgid: i32, call: &Call, host: &[u8], hdr_at: Option<u64>) -> i64 {
        use std::os::fd::AsRawFd;
        let a = call.args;
        let Some(root) = self.root.as_ref() else {
            return neg(c::EINVAL);
        };
        let target = match root.open_in_root(host, true) {
            Ok(fd) => fd,
            Err(e) => return neg(e),
        };
        let Ok(sock) = super::notify::take_fd(tgid, a[0] as i32) else {
            return neg(c::EBADF);
        };
        // SAFETY: all-zero is a valid sockaddr_un.
        let mut addr: c::sockaddr_un = unsafe { std::mem::zeroed() };
        addr.sun_family = c::AF_UNIX as c::sa_family_t;
        let name = format!("/proc/self/fd/{}", target.as_raw_fd());
        for (dst, &b) in addr.sun_path.iter_mut().zip(name.as_bytes()) {
            *dst = b as c::c_char;
        }
        let addr_len = (2 + name.len() + 1) as c::socklen_t;
        let addr_ptr = (&addr as *const c::sockaddr_un).cast::<c::sockaddr>();
        let fd = sock.as_raw_fd();
        if call.nr == c::SYS_connect {
            // SAFETY: fcntl and connect on our own descriptor, with a live address.
            return unsafe {
                let flags = c::fcntl(fd, c::F_GETFL);
                c::fcntl(fd, c::F_SETFL, flags | c::O_NONBLOCK);
                let r = c::connect(fd, addr_ptr, addr_len);
                let e = mem::errno();
                c::fcntl(fd, c::F_SETFL, flags);
                if r == 0 {
                    0
                } else {
                    neg(e)
                }
            };
        }
        // The data and flags: sendto's buffer, or the msghdr's iovecs.
        const MAX: u64 = 1 << 20;
        let (data, flags) = match hdr_at {
            None => {
                if a[2] > MAX {
                    return neg(c::EMSGSIZE);
                }
                match mem::read(tid, a[1], a[2] as usize) {
                    Ok(d) => (d, a[3]),
                    Err(e) => return neg(e),
                }
            }
            Some(at) => {
                let Ok(hdr) = mem::read(tid, at, MSGHDR_LEN) else {
                    return neg(c::EFAULT);
                };
                let word = |i: usize| u64::from_ne_bytes(hdr[i..i + 8].try_into().unwrap_or([0; 8]));
                let (iov, iovlen, controllen) = (word(16), word(24), word(40));
                if controllen > 0 {
                    return neg(c::EOPNOTSUPP);
                }
                if iovlen > 1024 {
                    return neg(c::EMSGSIZE);
                }
                let Ok(vec) = mem::read(tid, iov, 16 * iovlen as usize) else {
                    return neg(c::EFAULT);
                };
                let mut data = Vec::new();
                for v in vec.chunks(16) {
                    let base = u64::from_ne_bytes(v[..8].try_into().unwrap_or([0; 8]));
                    let len = u64::from_ne_bytes(v[8..].try_into().unwrap_or([0; 8]));
                    if data.len() as u64 + len > MAX {
                        return neg(c::EMSGSIZE);
                    }
                    match mem::read(tid, base, len as usize) {
                        Ok(d) => data.extend_from_slice(&d),
                        Err(e) => return neg(e),
                    }
                }
                let flags = if call.nr == c::SYS_sendmmsg { a[3] } else { a[2] };
                (data, flags)
            }
        };
        let send_flags = flags as i32 | c::MSG_DONTWAIT | c::MSG_NOSIGNAL;
        // SAFETY: sendto on our own descriptor from a live buffer, to a live address.
        let r = unsafe { c::sendto(fd, data.as_ptr().cast(), data.len(), send_flags, addr_ptr, addr_len) };
        if r < 0 {
            let e = mem::errno();
            if e == c::EPIPE && flags as i32 & c::MSG_NOSIGNAL == 0 {
                // SAFETY: tgkill has no memory arguments.
                unsafe { c::syscall(c::SYS_tgkill, tgid, tid, c::SIGPIPE) };
            }
            return neg(e);
        }
        if call.nr == c::SYS_sendmmsg {
            return match mem::write(tid, a[1] + MSGHDR_LEN as u64, &(r as u32).to_ne_bytes()) {
                Ok(()) => 1,
                Err(e) => neg(e),
            };
        }
        r as i64
    }

    /// The host form of socket address `addr` (the guest's bytes) if it is an AF_UNIX path
    /// (resolved in the root; `follow`: its last component may be a symbolic link), None if it
    /// is something else, or an errno: EPERM for an abstract name.
    fn unix_dest(&mut self, tid: i32, tgid: i32, addr: &[u8], follow: bool) -> Result<Option<Vec<u8>>, i32> {
        let addr = &addr[..addr.len().min(std::mem::size_of::<c::sockaddr_un>())];
        if addr.len() < 3 || u16::from_ne_bytes([addr[0], addr[1]]) != c::AF_UNIX as u16 {
            return Ok(None);
        }
        let path = &addr[2..];
        if path[0] == 0 {
            return Err(c::EPERM);
        }
        let path = &path[..path.iter().position(|&b| b == 0).unwrap_or(path.len())];
        let to_host = |g: i32| self.to_host.get(&g).copied();
        let who = Who { tid, tgid, host_pid: &to_host };
        let root = self.root.as_ref().expect("rooted");
        let host = root.resolve(&who, Base::Cwd, path, follow)?;
        if host.len() >= 108 {
            return Err(c::ENAMETOOLONG);
        }
        let mut new = addr[..2].to_vec();
        new.extend_from_slice(&host);
        new.push(0);
        Ok(Some(new))
    }

    /// The result the guest sees of a forwarded call that returned `ret` on the host.
    pub fn complete(&mut self, tid: i32, post: Post, ret: i64) -> i64 {
        match post {
            Post::Pid if ret > 0 => {
                self.guest_of(ret as i32).map_or_else(|| self.guest_id(ret as i32) as i64, |g| g as i64)
            }
            Post::Waitid(infop) if ret == 0 && infop != 0 => {
                // siginfo_t: si_signo, si_errno, si_code, padding, then si_pid at byte 16.
                if let Ok(b) = mem::read(tid, infop + 16, 4) {
                    let host = i32::from_ne_bytes([b[0], b[1], b[2], b[3]]);
                    if host > 0 {
                        let g = self.guest_of(host).unwrap_or(0);
                        let _ = mem::write(tid, infop + 16, &g.to_ne_bytes());
                    }
                }
                ret
            }
            Post::Siginfo(info) if ret > 0 => {
                if let Ok(mut b) = mem::read(tid, info, 24) {
                    if self.guest_siginfo(&mut b) {
                        let _ = mem::write(tid, info + 16, &b[16..20]);
                    }
                }
                ret
            }
            Post::Sendmmsg(vec) if ret >= 0 => {
                match mem::write(tid, vec + MSGHDR_LEN as u64, &(ret as u32).to_ne_bytes()) {
                    Ok(()) => 1,
                    Err(e) => neg(e),
                }
            }
            Post::Sockname { peer, fd, addr, len_at, size } if ret == 0 => {
                self.guest_sockname(tid, peer, fd, addr, len_at, size);
                ret
            }
            Post::Accept { addr, len_at, size } if ret >= 0 => {
                self.guest_sockname(tid, true, ret as i32, addr, len_at, size);
                ret
            }
            Post::Sender { addr, len_at, size } if ret >= 0 => {
                self.guest_sender(tid, addr, len_at, size);
                ret
            }
            Post::Senders(vec, names) if ret > 0 => {
                for (i, &(addr, size)) in names.iter().enumerate().take(ret as usize) {
                    self.guest_sender(tid, addr, vec + MMSGHDR_LEN * i as u64 + 8, size);
                }
                ret
            }
            Post::Getcwd(buf) if ret > 0 => {
                let Some(root) = self.root.as_ref() else {
                    return ret;
                };
                let Ok(host) = mem::read(tid, buf, ret as usize) else {
                    return ret;
                };
                let host = &host[..host.iter().position(|&b| b == 0).unwrap_or(host.len())];
                let guest = root.guest_path(host).unwrap_or(b"/").to_vec();
                let mut bytes = guest;
                bytes.push(0);
                match mem::write(tid, buf, &bytes) {
                    Ok(()) => bytes.len() as i64,
                    Err(e) => neg(e),
                }
            }
            _ => ret,
        }
    }
}

impl Kernel {
    /// Makes the AF_UNIX path in the sender's address recvfrom, recvmsg or recvmmsg wrote at
    /// `addr` of thread `tid` (a buffer of `size` bytes; the address's full length at
    /// `len_at`) a guest path: the host names a socket bound under the ptrace mechanisms by
    /// its host path. The message is taken, so unlike getpeername the host cannot be asked
    /// again: where the buffer was too short for the host's address, the guest gets the full
    /// length of its address but only the part of its path the host wrote past the root's
    /// (the rest of the buffer zeroed).
    fn guest_sender(&self, tid: i32, addr: u64, len_at: u64, size: u32) {
        let Some(root) = self.root.as_ref() else { return };
        if addr == 0 {
            return;
        }
        let Ok(full) = mem::read(tid, len_at, 4).map(|b| u32::from_ne_bytes([b[0], b[1], b[2], b[3]])) else {
            return;
        };
        let have = full.min(size) as usize;
        let Ok(got) = mem::read(tid, addr, have) else { return };
        if have <= 2 || u16::from_ne_bytes([got[0], got[1]]) != c::AF_UNIX as u16 || got[2] == 0 {
            return;
        }
        let prefix = root.host.len();
        let sun = &got[2..];
        let (new, new_len) = match sun.iter().position(|&b| b == 0) {
            // Whole: the path and its NUL.
            Some(end) => {
                let Some(guest) = root.guest_path(&sun[..end]) else { return };
                let mut new = (c::AF_UNIX as u16).to_ne_bytes().to_vec();
                new.extend_from_slice(guest);
                new.push(0);
                let len = new.len() as u32;
                (new, len)
            }
            // Cut short by the buffer: what of the guest path the host wrote.
            None if full as usize > have => {
                let mut beneath = root.host.clone();
                beneath.push(b'/');
                let known: &[u8] = if sun.starts_with(&beneath) {
                    &sun[prefix..]
                } else if beneath.starts_with(sun) {
                    &[]
                } else {
                    return;
                };
                let mut new = (c::AF_UNIX as u16).to_ne_bytes().to_vec();
                new.extend_from_slice(known);
                (new, full.saturating_sub(prefix as u32))
            }
            None => return,
        };
        let mut bytes = new;
        bytes.resize(have, 0);
        let _ = mem::write(tid, addr, &bytes);
        let _ = mem::write(tid, len_at, &new_len.to_ne_bytes());
    }

    /// Makes the AF_UNIX path in the address getsockname/getpeername (`peer`) returned for
    /// descriptor `fd` of thread `tid` (written at `addr`, a buffer of `size` bytes, its full
    /// length at `len_at`) a guest path: the host holds the host path the guest kernel bound
    /// it with. The address is the guest kernel's own getsockname/getpeername on a copy of
    /// the socket, whole even where the guest's buffer truncated it.
    fn guest_sockname(&self, tid: i32, peer: bool, fd: i32, addr: u64, len_at: u64, size: u32) {
        use std::os::fd::AsRawFd;
        let Some(root) = self.root.as_ref() else { return };
        let Ok(sock) = super::notify::take_fd(self.tgid_of(tid), fd) else { return };
        // SAFETY: all-zero is a valid sockaddr_un; the calls write at most `len` bytes into it.
        let mut sa: c::sockaddr_un = unsafe { std::mem::zeroed() };
        let mut len = std::mem::size_of::<c::sockaddr_un>() as c::socklen_t;
        let sa_ptr = (&mut sa as *mut c::sockaddr_un).cast::<c::sockaddr>();
        // SAFETY: as above, on our own descriptor.
        let r = unsafe {
            if peer {
                c::getpeername(sock.as_raw_fd(), sa_ptr, &mut len)
            } else {
                c::getsockname(sock.as_raw_fd(), sa_ptr, &mut len)
            }
        };
        if r != 0 || i32::from(sa.sun_family) != c::AF_UNIX || len <= 2 || sa.sun_path[0] == 0 {
            return;
        }
        let path: Vec<u8> = sa.sun_path.iter().take_while(|&&b| b != 0).map(|&b| b as u8).collect();
        let Some(guest) = root.guest_path(&path) else { return };
        let mut new = (c::AF_UNIX as u16).to_ne_bytes().to_vec();
        new.extend_from_slice(guest);
        new.push(0);
        let new_len = new.len() as u32;
        new.truncate(size as usize);
        let _ = mem::write(tid, addr, &new);
        let _ = mem::write(tid, len_at, &new_len.to_ne_bytes());
    }
}

/// struct msghdr's size on x86-64.
const MSGHDR_LEN: usize = 56;

/// struct mmsghdr's size on x86-64: a msghdr, its msg_len, padding.
const MMSGHDR_LEN: u64 = 64;

/// What to do with the peer address accept, accept4, recvfrom, recvmsg or recvmmsg `call` of
/// thread `tid` returns under a root: make an AF_UNIX path in it a guest path. Nothing when
/// the call asks for no address.
fn peer_address_post(tid: i32, call: &Call) -> Post {
    let a = call.args;
    let size_at = |at: u64| mem::read(tid, at, 4).map_or(0, |b| u32::from_ne_bytes([b[0], b[1], b[2], b[3]]));
    let named = |hdr: u64| read_msg_name(tid, hdr).filter(|&(name, _)| name != 0);
    match call.nr {
        c::SYS_accept | c::SYS_accept4 if a[1] != 0 && a[2] != 0 => {
            Post::Accept { addr: a[1], len_at: a[2], size: size_at(a[2]) }
        }
        c::SYS_recvfrom if a[4] != 0 && a[5] != 0 => Post::Sender { addr: a[4], len_at: a[5], size: size_at(a[5]) },
        c::SYS_recvmsg => match named(a[1]) {
            Some((name, size)) => Post::Sender { addr: name, len_at: a[1] + 8, size: size as u32 },
            None => Post::None,
        },
        c::SYS_recvmmsg => {
            let names: Vec<(u64, u32)> = (0..a[2].min(1024))
                .map(|i| named(a[1] + MMSGHDR_LEN * i).map_or((0, 0), |(name, size)| (name, size as u32)))
                .collect();
            if names.iter().any(|&(name, _)| name != 0) {
                Post::Senders(a[1], names)
            } else {
                Post::None
            }
        }
        _ => Post::None,
    }
}

/// The destination (msg_name, msg_namelen) of the msghdr at `at` in thread `tid`, if readable.
pub(crate) fn read_msg_name(tid: i32, at: u64) -> Option<(u64, u64)> {
    let hdr = mem::read(tid, at, 12).ok()?;
    let name = u64::from_ne_bytes(hdr[..8].try_into().ok()?);
    let len = u32::from_ne_bytes(hdr[8..12].try_into().ok()?);
    Some((name, len as u64))
}

/// The error a call the guest may not make fails with, if `call` is one: the calls the
/// table marks refused, the prctl options that would loosen the interception, and clone
/// with namespace flags.
pub(crate) fn refusal(call: &Call) -> Option<i64> {
    let a = call.args;
    if calls::handling(call.nr).0 == Handling::Refused {
        return Some(neg(calls::refused_errno(call.nr)));
    }
    match call.nr {
        c::SYS_prctl => {
            const PR_SET_SYSCALL_USER_DISPATCH: u64 = 59;
            let refused =
                [c::PR_SET_SECCOMP as u64, c::PR_SET_PTRACER as u64, PR_SET_SYSCALL_USER_DISPATCH, c::PR_SET_MM as u64];
            refused.contains(&a[0]).then_some(neg(c::EPERM))
        }
        c::SYS_ioctl => calls::REFUSED_IOCTLS.contains(&(a[1] as u32)).then_some(neg(c::EPERM)),
        // Device nodes would reach host devices (the kernel log, disks, memory).
        c::SYS_mknod | c::SYS_mknodat => {
            let mode = if call.nr == c::SYS_mknod { a[1] } else { a[2] } as u32;
            matches!(mode & c::S_IFMT, c::S_IFCHR | c::S_IFBLK).then_some(neg(c::EPERM))
        }
        c::SYS_clone => {
            let ns = (c::CLONE_NEWNS
                | c::CLONE_NEWPID
                | c::CLONE_NEWUSER
                | c::CLONE_NEWNET
                | c::CLONE_NEWUTS
                | c::CLONE_NEWIPC
                | c::CLONE_NEWCGROUP) as u64;
            (a[0] & ns != 0).then_some(neg(c::EPERM))
        }
        _ => None,
    }
}

/// Whether path argument `spec` of a call with arguments `a` follows a symbolic link last.
fn follows(spec: &PathArg, a: [u64; 6]) -> bool {
    match spec.follow {
        Follow::Yes => true,
        Follow::No => false,
        Follow::UnlessAtFlag(i) => a[i] & c::AT_SYMLINK_NOFOLLOW as u64 == 0,
        Follow::IfAtFlag(i) => a[i] & c::AT_SYMLINK_FOLLOW as u64 != 0,
        Follow::OpenFlags(i) => {
            let f = a[i] as i32;
            f & c::O_NOFOLLOW == 0 && f & (c::O_CREAT | c::O_EXCL) != (c::O_CREAT | c::O_EXCL)
        }
    }
}

/// A set*id argument: -1 leaves the id unchanged.
fn id_arg(v: u64) -> Option<u32> {
    (v as u32 != u32::MAX).then_some(v as u32)
}

/// Copies `name` into a NUL-terminated utsname field.
fn fill(field: &mut [c::c_char], name: &[u8]) {
    field.iter_mut().for_each(|b| *b = 0);
    for (dst, &src) in field.iter_mut().zip(name.iter().take(64)) {
        *dst = src as c::c_char;
    }
}
