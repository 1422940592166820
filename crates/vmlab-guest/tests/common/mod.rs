//! What the guest kernel's test binaries share: the runner and the mechanisms this host runs.

use std::process::Command;
use std::sync::OnceLock;

pub const GUEST: &str = env!("CARGO_BIN_EXE_vmlab-guest");
const MECHANISMS: [&str; 6] = ["ptrace", "sysemu", "seccomp-trace", "seccomp-notify", "sigsys", "user-dispatch"];

/// The mechanisms this host runs (probed once per test binary); the others are skipped with a
/// printed reason.
pub fn mechanisms() -> Vec<&'static str> {
    static RUNNABLE: OnceLock<Vec<&'static str>> = OnceLock::new();
    RUNNABLE
        .get_or_init(|| {
            MECHANISMS
                .iter()
                .copied()
                .filter(|m| {
                    let out = Command::new(GUEST).args(["-M", m, "--", "true"]).output().expect("run vmlab-guest");
                    if out.status.code() == Some(2) {
                        eprintln!("skipping mechanism {m}: {}", String::from_utf8_lossy(&out.stderr).trim());
                        return false;
                    }
                    true
                })
                .collect()
        })
        .clone()
}

/// The unprivileged user the escape tests also run as when they run as root: nobody.
pub const NOBODY: u32 = 65534;

/// Who runs a test's programs, natively and the guest kernel: the test's own user, or (when
/// that is root) the unprivileged user [`NOBODY`], with no supplementary groups and no
/// capabilities.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum User {
    Me,
    Nobody,
}

impl User {
    /// Whether the test process runs as root.
    pub fn root() -> bool {
        // SAFETY: geteuid has no arguments.
        unsafe { libc::geteuid() == 0 }
    }

    pub fn name(self) -> &'static str {
        match self {
            User::Me if User::root() => "root",
            User::Me => "the test's user",
            User::Nobody => "nobody",
        }
    }

    /// A command running `program` as this user (std drops the groups when root sets a uid).
    #[allow(dead_code)]
    pub fn command(self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut c = Command::new(program);
        if self == User::Nobody {
            use std::os::unix::process::CommandExt;
            c.uid(NOBODY).gid(NOBODY);
        }
        c
    }

    /// Gives `path` and everything beneath it to this user, so that its programs may use the
    /// guest root and the bait as their owner (nothing for the test's own user).
    #[allow(dead_code)]
    pub fn give(self, path: &std::path::Path) {
        if self == User::Me {
            return;
        }
        std::os::unix::fs::lchown(path, Some(NOBODY), Some(NOBODY)).expect("chown");
        if path.is_dir() && !path.is_symlink() {
            for e in std::fs::read_dir(path).expect("read_dir").flatten() {
                self.give(&e.path());
            }
        }
    }
}

/// The users the test machine lets the escape tests run as: the test's own, and nobody as well
/// when the tests run as root. Run by another user, the tests say that the root half is left
/// out.
#[allow(dead_code)]
pub fn users() -> Vec<User> {
    if User::root() {
        vec![User::Me, User::Nobody]
    } else {
        eprintln!("not root: the escape tests run as this unprivileged user only, not as root");
        vec![User::Me]
    }
}

/// The mechanisms this host runs as `user` (probed once per user). As nobody, a mechanism that
/// needs a privilege must say so (status 2, naming what it needs); it is printed and left out.
#[allow(dead_code)]
pub fn mechanisms_as(user: User) -> Vec<&'static str> {
    static UNPRIVILEGED: OnceLock<Vec<&'static str>> = OnceLock::new();
    if user == User::Me {
        return mechanisms();
    }
    UNPRIVILEGED
        .get_or_init(|| {
            mechanisms()
                .into_iter()
                .filter(|m| {
                    let out = user.command(GUEST).args(["-M", m, "--", "true"]).output().unwrap_or_else(|e| {
                        panic!("{user:?} cannot run {GUEST} ({e}): every directory above the checkout must be searchable by others (mktemp -d makes one that is not: chmod 755 it)")
                    });
                    let err = String::from_utf8_lossy(&out.stderr).trim().to_string();
                    if out.status.success() {
                        return true;
                    }
                    assert!(
                        out.status.code() == Some(2) && err.contains("needs") && err.lines().count() == 1,
                        "{m} as nobody neither runs nor says what it needs: {:?} {err}",
                        out.status
                    );
                    eprintln!("{m} needs root, as nobody it says: {err}");
                    false
                })
                .collect()
        })
        .clone()
}

/// Everything under `base` but the guest root `root` (and what is beneath it): each path with
/// its type and mode, owner, size, modification time, and a file's contents or a link's
/// target. Taken before and after a guest runs, it shows that nothing outside the root changed.
#[allow(dead_code)]
pub fn outside_root(
    base: &std::path::Path,
    root: &std::path::Path,
) -> std::collections::BTreeMap<std::path::PathBuf, String> {
    use std::os::unix::fs::MetadataExt;
    fn walk(
        dir: &std::path::Path,
        root: &std::path::Path,
        out: &mut std::collections::BTreeMap<std::path::PathBuf, String>,
    ) {
        let mut entries: Vec<_> =
            std::fs::read_dir(dir).map(|d| d.flatten().map(|e| e.path()).collect()).unwrap_or_default();
        entries.sort();
        for p in entries {
            if p == root {
                continue;
            }
            let Ok(m) = std::fs::symlink_metadata(&p) else { continue };
            let what = if m.file_type().is_symlink() {
                format!("link {:?}", std::fs::read_link(&p).ok())
            } else if m.is_file() {
                format!("file {:?}", std::fs::read(&p).ok())
            } else {
                String::new()
            };
            let line = format!(
                "mode {:o} owner {}:{} size {} mtime {}.{} {what}",
                m.mode(),
                m.uid(),
                m.gid(),
                m.size(),
                m.mtime(),
                m.mtime_nsec()
            );
            out.insert(p.clone(), line);
            if m.is_dir() {
                walk(&p, root, out);
            }
        }
    }
    let mut out = std::collections::BTreeMap::new();
    if let Ok(m) = std::fs::symlink_metadata(base) {
        out.insert(base.to_path_buf(), format!("mode {:o} mtime {}.{}", m.mode(), m.mtime(), m.mtime_nsec()));
    }
    walk(base, root, &mut out);
    out
}
