//! execve and execveat under a guest root, for the ptrace mechanisms: the `#!` interpreter of
//! a script and the ELF interpreter (PT_INTERP, the dynamic loader) of a program are the
//! root's, not the host's.
//!
//! The host kernel opens both by path in the calling process's file-system root, which for the
//! ptrace mechanisms is the host's: rewriting only the program's path would run the host's
//! interpreter and loader (or fail where the host has none at that path). So the guest kernel
//! reads the program's first bytes through a descriptor opened in the root
//! (openat2(RESOLVE_IN_ROOT)), follows `#!` lines itself, and for a program with an ELF
//! interpreter has the host exec that interpreter, resolved in the root, as a program
//! (`LOADER --argv0 ARGV0 PROGRAM ARGS...`, which glibc's and musl's loaders take): the host
//! then opens nothing by a path outside the root, and the loader opens the program and its
//! libraries with calls the guest kernel contains like any other.

use super::kernel::{Call, Decision, Kernel, Post, EXEC_AREA, EXEC_AREA_LEN};
use super::mem;
use super::path::{Base, Root, Who};
use libc as c;
use std::fs::File;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::FileExt;

/// `#!` interpreters followed before ELOOP: the host kernel allows five rewrites of the
/// program it is asked to run.
const MAX_SCRIPTS: usize = 5;

/// The bytes of a `#!` line the host kernel reads (BINPRM_BUF_SIZE).
const SHEBANG_LEN: usize = 256;

/// One word of the new argument vector: a string of the guest kernel's, or a pointer the
/// guest passed (its own arguments, left where they are).
enum Word {
    Own(Vec<u8>),
    Guest(u64),
}

fn neg(errno: i32) -> i64 {
    -(errno as i64)
}

impl Kernel {
    /// execve or execveat of thread `tid` under the root, when the program is a script or
    /// has an ELF interpreter: the call made of the root's interpreters (see the module
    /// comment), or the error it fails with. None for a program the host can run as it is (a
    /// static one, or anything the guest kernel cannot read), which is forwarded as a path
    /// call.
    pub(super) fn exec_in_root(&self, tid: i32, tgid: i32, call: &Call, scratch: Option<u64>) -> Option<Decision> {
        let root = self.root.as_ref()?;
        let a = call.args;
        let to_host = |g: i32| self.host_of(g);
        let who = Who { tid, tgid, host_pid: &to_host };
        let (argv_at, target) = if call.nr == c::SYS_execve {
            let path = mem::read_cstr(tid, a[0], 4096).ok()?;
            (a[1], root.resolve(&who, Base::Cwd, &path, true).map(|h| (h, true)))
        } else {
            let path = mem::read_cstr(tid, a[1], 4096).ok()?;
            let flags = a[4] as i32;
            let dirfd = a[0] as i32;
            let target = if path.is_empty() && flags & c::AT_EMPTY_PATH != 0 {
                // The descriptor itself: the program the loader is to open is where it leads.
                let fd = super::notify::take_fd(tgid, dirfd).ok()?;
                let link = std::fs::read_link(format!("/proc/self/fd/{}", fd.as_raw_fd())).ok()?;
                let host = link.as_os_str().as_bytes().to_vec();
                root.guest_path(&host)?;
                Ok((host, true))
            } else {
                let base = if dirfd == c::AT_FDCWD { Base::Cwd } else { Base::Fd(dirfd) };
                let follow = flags & c::AT_SYMLINK_NOFOLLOW == 0;
                root.resolve(&who, base, &path, follow).map(|h| (h, follow))
            };
            (a[2], target)
        };
        let (mut host, mut follow) = match target {
            Ok(t) => t,
            Err(e) => return Some(Decision::Emulate(neg(e))),
        };
        let args = match guest_args(tid, argv_at) {
            Ok(v) => v,
            Err(e) => return Some(Decision::Emulate(neg(e))),
        };
        // The words before the guest's own arguments, and whether the guest's argv[0] is
        // still the first (each `#!` interpreter replaces argv[0]).
        let mut head: Vec<Word> = Vec::new();
        let mut skip = 0;
        let mut scripts = 0;
        let loader = loop {
            let file = match open_executable(root, &host, follow) {
                Ok(Some(f)) => f,
                Ok(None) if scripts == 0 => return None,
                Ok(None) => break None,
                Err(e) => return Some(Decision::Emulate(neg(e))),
            };
            let mut first = [0u8; SHEBANG_LEN];
            let n = file.read_at(&mut first, 0).ok()?;
            if let Some((interp, optional)) = shebang(&first[..n]) {
                scripts += 1;
                if scripts > MAX_SCRIPTS {
                    return Some(Decision::Emulate(neg(c::ELOOP)));
                }
                // As the host kernel: the interpreter as written, its optional argument, the
                // script as it was named (the path exec'd), then the arguments after argv[0].
                let named = match scripts {
                    1 => exec_path(tid, call)?,
                    _ => match head.first() {
                        Some(Word::Own(w)) => w.clone(),
                        _ => return None,
                    },
                };
                if head.is_empty() {
                    skip = args.len().min(1);
                } else {
                    head.remove(0);
                }
                let mut words = vec![Word::Own(interp.to_vec())];
                if !optional.is_empty() {
                    words.push(Word::Own(optional.to_vec()));
                }
                words.push(Word::Own(named));
                words.append(&mut head);
                head = words;
                host = match root.resolve(&who, Base::Cwd, interp, true) {
                    Ok(h) => h,
                    Err(e) => return Some(Decision::Emulate(neg(e))),
                };
                follow = true;
                continue;
            }
            match elf_interpreter(&file) {
                Some(interp) => break Some(interp),
                None if scripts == 0 => return None,
                None => break None,
            }
        };
        let Some(scratch) = scratch else {
            return Some(Decision::NeedScratch);
        };
        // The vector: the loader's own words first, then the program's argv.
        let mut words: Vec<Word> = Vec::new();
        let mut path = host.clone();
        if let Some(interp) = loader {
            let program = root.guest_path(&host)?.to_vec();
            path = match root.resolve(&who, Base::Cwd, &interp, true) {
                Ok(h) => h,
                Err(e) => return Some(Decision::Emulate(neg(e))),
            };
            let argv0 = match head.first() {
                Some(_) => head.remove(0),
                None if skip < args.len() => {
                    skip += 1;
                    Word::Guest(args[0])
                }
                None => Word::Own(Vec::new()),
            };
            words.extend([Word::Own(interp), Word::Own(b"--argv0".to_vec()), argv0, Word::Own(program)]);
        }
        words.append(&mut head);
        words.extend(args[skip..].iter().map(|&p| Word::Guest(p)));
        Some(write_exec(tid, call, scratch, &path, &words))
    }
}

/// The path execve or execveat `call` names, as the guest wrote it (what the host kernel
/// passes a script's interpreter); for a descriptor (AT_EMPTY_PATH), /dev/fd/N, as Linux.
fn exec_path(tid: i32, call: &Call) -> Option<Vec<u8>> {
    let a = call.args;
    if call.nr == c::SYS_execve {
        return mem::read_cstr(tid, a[0], 4096).ok();
    }
    let path = mem::read_cstr(tid, a[1], 4096).ok()?;
    let dirfd = a[0] as i32;
    Some(match () {
        _ if path.starts_with(b"/") || dirfd == c::AT_FDCWD => path,
        _ if path.is_empty() => format!("/dev/fd/{dirfd}").into_bytes(),
        _ => [format!("/dev/fd/{dirfd}/").as_bytes(), &path].concat(),
    })
}

/// The pointers of the guest's argument vector at `at` (none for a null vector); E2BIG for
/// more than fit the exec area beside the guest kernel's own words, EFAULT for a vector that
/// runs into unmapped memory.
fn guest_args(tid: i32, at: u64) -> Result<Vec<u64>, i32> {
    let mut out = Vec::new();
    if at == 0 {
        return Ok(out);
    }
    let max = (EXEC_AREA_LEN / 8) as usize - 512;
    let mut p = at;
    loop {
        // A page at a time: the vector may end just before an unmapped page.
        let chunk = (4096 - (p % 4096)) as usize & !7;
        let bytes = mem::read(tid, p, chunk.max(8))?;
        for w in bytes.chunks_exact(8) {
            let v = u64::from_ne_bytes(w.try_into().unwrap_or([0; 8]));
            if v == 0 {
                return Ok(out);
            }
            if out.len() >= max {
                return Err(c::E2BIG);
            }
            out.push(v);
        }
        p += chunk.max(8) as u64;
    }
}

/// Opens `host` (resolved in the root) for reading, after the host kernel's checks of a file
/// it is asked to execute: a regular file (a symbolic link not followed is ELOOP), execute
/// permission, a file system mounted without noexec (EACCES otherwise). Ok(None) where the
/// guest kernel cannot read it (the host decides).
fn open_executable(root: &Root, host: &[u8], follow: bool) -> Result<Option<File>, i32> {
    let fd: OwnedFd = root.open_in_root(host, follow)?;
    // SAFETY: an all-zero stat is valid; fstat gets a valid out-pointer.
    let mut st: c::stat = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    if unsafe { c::fstat(fd.as_raw_fd(), &mut st) } != 0 {
        return Err(mem::errno());
    }
    match st.st_mode & c::S_IFMT {
        c::S_IFREG => {}
        c::S_IFLNK => return Err(c::ELOOP),
        _ => return Err(c::EACCES),
    }
    // SAFETY: an empty path with AT_EMPTY_PATH names the descriptor itself.
    let x = unsafe {
        c::syscall(c::SYS_faccessat2, fd.as_raw_fd(), c"".as_ptr(), c::X_OK, c::AT_EMPTY_PATH | c::AT_EACCESS)
    };
    if x != 0 {
        return Err(c::EACCES);
    }
    // SAFETY: an all-zero statvfs is valid; fstatvfs gets a valid out-pointer.
    let mut fs: c::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    if unsafe { c::fstatvfs(fd.as_raw_fd(), &mut fs) } == 0 && fs.f_flag & c::ST_NOEXEC != 0 {
        return Err(c::EACCES);
    }
    Ok(File::open(format!("/proc/self/fd/{}", fd.as_raw_fd())).ok())
}

/// The interpreter and its optional argument of a `#!` line, as the host kernel splits it:
/// blanks around, the interpreter up to the first blank, the rest as one argument.
fn shebang(first: &[u8]) -> Option<(&[u8], &[u8])> {
    let line = first.strip_prefix(b"#!")?;
    let line = &line[..line.iter().position(|&b| b == b'\n').unwrap_or(line.len())];
    let blank = |b: &u8| *b == b' ' || *b == b'\t';
    let line = &line[line.iter().position(|b| !blank(b))?..];
    let end = line.iter().position(blank).unwrap_or(line.len());
    let (interp, rest) = line.split_at(end);
    let rest = &rest[rest.iter().position(|b| !blank(b)).unwrap_or(rest.len())..];
    let optional = &rest[..rest.iter().rposition(|b| !blank(b)).map_or(0, |i| i + 1)];
    Some((interp, optional))
}

/// The ELF interpreter (PT_INTERP) a program names, if it is an ELF executable or shared
/// object (32 or 64 bits) that names one.
fn elf_interpreter(file: &File) -> Option<Vec<u8>> {
    const PT_INTERP: u32 = 3;
    let mut eh = [0u8; 64];
    file.read_exact_at(&mut eh, 0).ok()?;
    if &eh[..4] != b"\x7fELF" || eh[5] != 1 {
        return None;
    }
    let u16_at = |b: &[u8], i: usize| u16::from_le_bytes([b[i], b[i + 1]]) as u64;
    let u32_at = |b: &[u8], i: usize| u32::from_le_bytes(b[i..i + 4].try_into().unwrap_or([0; 4])) as u64;
    let u64_at = |b: &[u8], i: usize| u64::from_le_bytes(b[i..i + 8].try_into().unwrap_or([0; 8]));
    if !matches!(u16_at(&eh, 16), 2 | 3) {
        return None;
    }
    let wide = match eh[4] {
        1 => false,
        2 => true,
        _ => return None,
    };
    let (phoff, phentsize, phnum) = if wide {
        (u64_at(&eh, 32), u16_at(&eh, 54), u16_at(&eh, 56))
    } else {
        (u32_at(&eh, 28), u16_at(&eh, 42), u16_at(&eh, 44))
    };
    if phentsize < if wide { 56 } else { 32 } || phnum == 0 || phnum > 1024 {
        return None;
    }
    let mut ph = vec![0u8; (phentsize * phnum) as usize];
    file.read_exact_at(&mut ph, phoff).ok()?;
    for h in ph.chunks_exact(phentsize as usize) {
        if u32_at(h, 0) != u64::from(PT_INTERP) {
            continue;
        }
        let (offset, size) = if wide { (u64_at(h, 8), u64_at(h, 32)) } else { (u32_at(h, 4), u32_at(h, 16)) };
        if !(2..=4096).contains(&size) {
            return None;
        }
        let mut name = vec![0u8; size as usize];
        file.read_exact_at(&mut name, offset).ok()?;
        let end = name.iter().position(|&b| b == 0)?;
        name.truncate(end);
        return (!name.is_empty()).then_some(name);
    }
    None
}

/// Writes the exec's path (page 0 of the scratch) and its argument vector (the exec area: the
/// pointers, then the guest kernel's strings) into thread `tid`'s scratch memory; the call,
/// made an execve of them with the guest's environment, or the error writing failed with.
fn write_exec(tid: i32, call: &Call, scratch: u64, path: &[u8], words: &[Word]) -> Decision {
    let a = call.args;
    let area = scratch + EXEC_AREA;
    let array_len = 8 * (words.len() as u64 + 1);
    let strings_at = area + array_len;
    let mut strings = Vec::new();
    let mut array = Vec::with_capacity(array_len as usize);
    for w in words {
        let p = match w {
            Word::Guest(p) => *p,
            Word::Own(s) => {
                let at = strings_at + strings.len() as u64;
                strings.extend_from_slice(s);
                strings.push(0);
                at
            }
        };
        array.extend_from_slice(&p.to_ne_bytes());
    }
    array.extend_from_slice(&0u64.to_ne_bytes());
    let mut path = path.to_vec();
    path.push(0);
    if path.len() > 4096 {
        return Decision::Emulate(neg(c::ENAMETOOLONG));
    }
    if array_len + strings.len() as u64 > EXEC_AREA_LEN {
        return Decision::Emulate(neg(c::E2BIG));
    }
    for (at, bytes) in [(scratch, &path), (area, &array), (strings_at, &strings)] {
        if let Err(e) = mem::poke(tid, at, bytes) {
            return Decision::Emulate(neg(e));
        }
    }
    // An execveat stays one, of the host path with no flags (the guest kernel followed or
    // refused the last link itself).
    let args = match call.nr {
        c::SYS_execve => [scratch, area, a[2], a[3], a[4], a[5]],
        _ => [c::AT_FDCWD as u32 as u64, scratch, area, a[3], 0, a[5]],
    };
    Decision::Forward { args: Some(args), post: Post::Exec }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shebang_lines_split_as_the_host_kernel_splits_them() {
        assert_eq!(shebang(b"#!/bin/sh\necho"), Some((&b"/bin/sh"[..], &b""[..])));
        assert_eq!(shebang(b"#! /usr/bin/env  python3 -u \nx"), Some((&b"/usr/bin/env"[..], &b"python3 -u"[..])));
        assert_eq!(shebang(b"#!\t/bin/sh -e"), Some((&b"/bin/sh"[..], &b"-e"[..])));
        assert_eq!(shebang(b"#!   \n"), None);
        assert_eq!(shebang(b"\x7fELF"), None);
    }

    #[test]
    fn the_elf_interpreter_of_a_dynamic_program_is_read() {
        let exe = File::open("/proc/self/exe").unwrap();
        // This test binary is dynamically linked on glibc hosts; a static build has none.
        if let Some(interp) = elf_interpreter(&exe) {
            assert!(interp.starts_with(b"/"), "{interp:?}");
            assert!(!interp.contains(&0));
        }
        let sh = File::open("/bin/sh").unwrap();
        assert!(elf_interpreter(&sh).is_some_and(|i| std::path::Path::new(std::ffi::OsStr::from_bytes(&i)).exists()));
    }
}
