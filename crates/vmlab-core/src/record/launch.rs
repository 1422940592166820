//! Running a program under the recorder: build the plugin and the exec-following library
//! (C sources compiled into the binary, built once per source version with the system's C
//! compiler), start `qemu-x86_64` with them, wait (ignoring Ctrl-C, which the program gets
//! and dies of), then merge the raw files into the trace and say how the recording ended.

use super::merge::{merge, MergeSummary};
use super::RecordError;
use crate::trace::x86::{Header, Host, Trailer, Writer};
use std::ffi::OsString;
use std::hash::{Hash, Hasher};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

/// The recorder plugin's source (QEMU TCG plugin, API v1).
const PLUGIN_SOURCE: &str = include_str!("../../../../recorder/x86/x86rec.c");
/// The exec-following library's source (preloaded into the recorded programs).
const EXEC_SOURCE: &str = include_str!("../../../../recorder/x86/exec.c");
/// The recorder's version, in every trace header.
pub const RECORDER_VERSION: &str = "x86rec 1";
/// How often the progress callback hears how much has been recorded.
const POLL: Duration = Duration::from_millis(250);

/// What to record.
#[derive(Clone, Debug)]
pub struct RecordSpec {
    /// The program: a path, or a name looked up on PATH.
    pub program: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// The trace to write.
    pub output: PathBuf,
    /// Keep the raw files (next to the output, `OUTPUT.raw/`) instead of deleting them.
    pub keep_raw: bool,
    /// Record only windows of each thread's references in full (`--sample`); None: all.
    pub sample: Option<crate::trace::x86::Sampling>,
}

/// How far a recording is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecordProgress {
    /// The program runs: raw bytes written so far by how many process images.
    Running {
        /// Raw bytes written.
        raw_bytes: u64,
        /// Process images so far.
        images: u64,
    },
    /// Merging: references written to the trace so far.
    Merging {
        /// References written.
        refs: u64,
    },
}

/// A finished recording.
#[derive(Clone, Debug)]
pub struct Recorded {
    /// The trace's trailer (totals, how the recording ended).
    pub trailer: Trailer,
    /// What the merge found.
    pub merge: MergeSummary,
    /// The trace's size in bytes.
    pub bytes: u64,
    /// Raw bytes the recorder wrote.
    pub raw_bytes: u64,
}

/// Records `spec.program` (and every process it forks or execs) into `spec.output`.
pub fn record(
    spec: &RecordSpec,
    progress: &mut dyn FnMut(RecordProgress),
) -> Result<Recorded, RecordError> {
    let qemu = find_qemu()?;
    let program =
        resolve(&spec.program).ok_or_else(|| RecordError::NoProgram(spec.program.clone()))?;
    let output_error = |e: std::io::Error| RecordError::Output {
        path: spec.output.display().to_string(),
        reason: e.to_string(),
    };
    // Fail before running anything if the output cannot be written.
    std::fs::File::create(&spec.output).map_err(output_error)?;
    let (plugin, preload) = build_recorder()?;
    let raw = raw_dir(&spec.output);
    if raw.exists() {
        std::fs::remove_dir_all(&raw).map_err(output_error)?;
    }
    std::fs::create_dir_all(&raw).map_err(output_error)?;
    let raw = raw.canonicalize().map_err(output_error)?;
    let result = run_and_merge(spec, &qemu, &program, &plugin, &preload, &raw, progress);
    if !spec.keep_raw {
        let _ = std::fs::remove_dir_all(&raw);
    }
    if result.is_err() {
        // Nothing half-written is left behind under the output's name.
        let _ = std::fs::remove_file(&spec.output);
    }
    result
}

fn run_and_merge(
    spec: &RecordSpec,
    qemu: &Path,
    program: &Path,
    plugin: &Path,
    preload: &Path,
    raw: &Path,
    progress: &mut dyn FnMut(RecordProgress),
) -> Result<Recorded, RecordError> {
    let maps = raw.join("root.maps");
    let vars = [
        ("LD_PRELOAD", preload.as_os_str()),
        ("VMLAB_REC_QEMU", qemu.as_os_str()),
        ("VMLAB_REC_PLUGIN", plugin.as_os_str()),
        ("VMLAB_REC_DIR", raw.as_os_str()),
        ("VMLAB_REC_PRELOAD", preload.as_os_str()),
    ];
    if let Some(s) = spec.sample {
        // Every image's plugin reads it there: the program's environment stays untouched.
        std::fs::write(
            raw.join("sampling"),
            format!("{}:{}:{}", s.period, s.window, s.warm),
        )
        .map_err(|e| RecordError::Output {
            path: raw.join("sampling").display().to_string(),
            reason: e.to_string(),
        })?;
    }
    let mut command = Command::new(qemu);
    command
        .arg("-d")
        .arg("page")
        .arg("-D")
        .arg(&maps)
        .arg("-plugin")
        .arg(format!(
            "{},dir={},maps={},root=1",
            plugin.display(),
            raw.display(),
            maps.display()
        ));
    for (key, value) in vars {
        let mut pair = std::ffi::OsString::from(format!("{key}="));
        pair.push(value);
        command.arg("-E").arg(pair);
    }
    let (argv0, file, leading) = emulated(&spec.program, program);
    command
        .arg("-0")
        .arg(argv0)
        .arg(file)
        .args(leading)
        .args(&spec.args)
        .env_remove("LD_PRELOAD")
        .stdin(Stdio::inherit());
    // SAFETY: between fork and exec the child only resets two signal dispositions
    // (async-signal-safe calls), so the program, not the recorder, takes Ctrl-C.
    unsafe {
        command.pre_exec(|| {
            libc::signal(libc::SIGINT, libc::SIG_DFL);
            libc::signal(libc::SIGQUIT, libc::SIG_DFL);
            Ok(())
        });
    }
    let spawn_error = |e: std::io::Error| RecordError::Spawn {
        qemu: qemu.display().to_string(),
        reason: e.to_string(),
    };
    let header = header(spec, program, qemu);
    let ignored = IgnoreInterrupts::new();
    let mut child = command.spawn().map_err(spawn_error)?;
    let status = loop {
        if let Some(status) = child.try_wait().map_err(spawn_error)? {
            break status;
        }
        let (raw_bytes, images) = raw_size(raw);
        progress(RecordProgress::Running { raw_bytes, images });
        std::thread::sleep(POLL);
    };
    drop(ignored);
    let (raw_bytes, _) = raw_size(raw);
    let (complete, end, code) = ending(status);
    let mut writer = Writer::create(&spec.output, &header)?;
    let merged = merge(raw, &mut writer, Some(code), &mut |refs| {
        progress(RecordProgress::Merging { refs })
    })
    .map_err(|e| match e {
        RecordError::Empty(_) => RecordError::Empty(format!(" ({end})")),
        other => other,
    })?;
    let trailer = writer.finish(complete, end)?;
    let bytes = std::fs::metadata(&spec.output)
        .map(|m| m.len())
        .unwrap_or(0);
    Ok(Recorded {
        trailer,
        merge: merged,
        bytes,
        raw_bytes,
    })
}

/// What the emulator runs for `program`, as (argv[0], the file, the arguments before the
/// user's): the program itself, or for a `#!` script its interpreter with the interpreter's
/// argument and the script (QEMU runs only ELF files; exec.c does the same for exec'd scripts).
fn emulated(name: &str, program: &Path) -> (OsString, PathBuf, Vec<OsString>) {
    let mut head = [0u8; 256];
    let n = std::fs::File::open(program)
        .and_then(|mut f| std::io::Read::read(&mut f, &mut head))
        .unwrap_or(0);
    let line = head[..n]
        .strip_prefix(b"#!")
        .and_then(|rest| rest.split(|&b| b == b'\n').next())
        .map(|l| String::from_utf8_lossy(l).into_owned());
    let mut words = line.as_deref().unwrap_or("").split_whitespace();
    match words.next() {
        Some(interp) => {
            let rest = words.collect::<Vec<_>>().join(" ");
            let mut leading: Vec<OsString> = Vec::new();
            if !rest.is_empty() {
                leading.push(rest.into());
            }
            leading.push(program.as_os_str().to_owned());
            (interp.into(), PathBuf::from(interp), leading)
        }
        None => (name.into(), program.to_owned(), Vec::new()),
    }
}

/// Whether the recording covers the whole run, how it ended, and the program's exit code
/// (128 + the signal for a killed program, as a shell reports it).
fn ending(status: std::process::ExitStatus) -> (bool, String, i32) {
    if let Some(code) = status.code() {
        return (true, format!("exited with status {code}"), code);
    }
    let signal = status.signal().unwrap_or(0);
    let end = match signal {
        libc::SIGINT => "interrupted (SIGINT)".to_owned(),
        libc::SIGTERM => "terminated (SIGTERM)".to_owned(),
        _ => format!("program killed by signal {signal}"),
    };
    (false, end, 128 + signal)
}

/// SIGINT and SIGQUIT ignored while alive: Ctrl-C reaches the whole foreground process
/// group, and the recorder must outlive the program to finish the trace.
struct IgnoreInterrupts {
    int: libc::sighandler_t,
    quit: libc::sighandler_t,
}

impl IgnoreInterrupts {
    fn new() -> Self {
        // SAFETY: signal() with SIG_IGN installs no handler code; the previous dispositions
        // are restored on drop.
        unsafe {
            IgnoreInterrupts {
                int: libc::signal(libc::SIGINT, libc::SIG_IGN),
                quit: libc::signal(libc::SIGQUIT, libc::SIG_IGN),
            }
        }
    }
}

impl Drop for IgnoreInterrupts {
    fn drop(&mut self) {
        // SAFETY: restores the dispositions saved by `new`.
        unsafe {
            libc::signal(libc::SIGINT, self.int);
            libc::signal(libc::SIGQUIT, self.quit);
        }
    }
}

/// Where the raw files of a recording go: beside the output, on the same file system.
fn raw_dir(output: &Path) -> PathBuf {
    let mut name = output.file_name().unwrap_or_default().to_os_string();
    name.push(".raw");
    output.with_file_name(name)
}

/// Raw bytes and raw files written so far.
fn raw_size(dir: &Path) -> (u64, u64) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return (0, 0);
    };
    entries
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "raw"))
        .fold((0, 0), |(bytes, n), e| {
            (bytes + e.metadata().map(|m| m.len()).unwrap_or(0), n + 1)
        })
}

/// `qemu-x86_64` (or `$VMLAB_QEMU`), as a path.
fn find_qemu() -> Result<PathBuf, RecordError> {
    let name = std::env::var("VMLAB_QEMU").unwrap_or_else(|_| "qemu-x86_64".to_owned());
    resolve(&name).ok_or(RecordError::QemuMissing(name))
}

/// A program name resolved like execvp: a path as given, or the first executable on PATH.
fn resolve(program: &str) -> Option<PathBuf> {
    let executable = |p: &Path| {
        use std::os::unix::fs::PermissionsExt;
        p.metadata()
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if program.contains('/') {
        let path = PathBuf::from(program);
        return executable(&path).then(|| path.canonicalize().unwrap_or(path));
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|p| executable(p))
}

/// Builds the plugin and the exec library once per source version into the user's cache
/// (`$XDG_CACHE_HOME/vmlab` or `~/.cache/vmlab`, else the temporary directory).
fn build_recorder() -> Result<(PathBuf, PathBuf), RecordError> {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    (PLUGIN_SOURCE, EXEC_SOURCE).hash(&mut hasher);
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(std::env::temp_dir)
        .join("vmlab")
        .join(format!("recorder-{:016x}", hasher.finish()));
    let plugin = cache.join("x86rec.so");
    let preload = cache.join("x86rec-exec.so");
    if plugin.exists() && preload.exists() {
        return Ok((plugin, preload));
    }
    let fail = |e: String| RecordError::Compiler(e);
    std::fs::create_dir_all(&cache).map_err(|e| fail(format!("{}: {e}", cache.display())))?;
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".to_owned());
    for (source, out, libs) in [
        (PLUGIN_SOURCE, &plugin, "-lpthread"),
        (EXEC_SOURCE, &preload, "-ldl"),
    ] {
        // Source and library are written under names of this process's own and the library
        // renamed into place, so concurrent recordings never read or load a half-written file.
        let pid = std::process::id();
        let src = out.with_extension(format!("{pid}.c"));
        std::fs::write(&src, source).map_err(|e| fail(format!("{}: {e}", src.display())))?;
        let partial = out.with_extension(format!("{pid}.so"));
        let result = Command::new(&cc)
            .args(["-O2", "-shared", "-fPIC", "-o"])
            .arg(&partial)
            .arg(&src)
            .arg(libs)
            .output()
            .map_err(|e| fail(format!("{cc}: {e}")))?;
        if !result.status.success() {
            let stderr = String::from_utf8_lossy(&result.stderr);
            let first = stderr.lines().next().unwrap_or("").to_owned();
            return Err(fail(format!("{cc} failed on {}: {first}", src.display())));
        }
        let _ = std::fs::remove_file(&src);
        std::fs::rename(&partial, out).map_err(|e| fail(format!("{}: {e}", out.display())))?;
    }
    Ok((plugin, preload))
}

/// The trace header: the program, the machine, the recorder and the emulator.
fn header(spec: &RecordSpec, program: &Path, qemu: &Path) -> Header {
    let read = |path: &str| {
        std::fs::read_to_string(path)
            .map(|s| s.trim().to_owned())
            .unwrap_or_default()
    };
    let cpu = read("/proc/cpuinfo")
        .lines()
        .find_map(|l| l.strip_prefix("model name"))
        .map(|l| l.trim_start_matches([' ', '\t', ':']).to_owned())
        .unwrap_or_default();
    let qemu_version = Command::new(qemu)
        .arg("--version")
        .output()
        .map(|o| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .next()
                .unwrap_or("")
                .to_owned()
        })
        .unwrap_or_default();
    Header {
        program: program.display().to_string(),
        args: spec.args.clone(),
        cwd: std::env::current_dir()
            .map(|d| d.display().to_string())
            .unwrap_or_default(),
        host: Host {
            hostname: read("/proc/sys/kernel/hostname"),
            kernel: format!("Linux {}", read("/proc/sys/kernel/osrelease")),
            cpu,
        },
        recorder: format!("vmlab {} {RECORDER_VERSION}", crate::provenance::VERSION),
        qemu: qemu_version,
        date: utc_now(),
        interleaving: INTERLEAVING.to_owned(),
        sample: spec.sample,
    }
}

/// How threads and processes are interleaved in the merged stream.
pub const INTERLEAVING: &str = "each thread's references in blocks (flushed when 256 KiB full and at every system call), blocks of all threads and processes ordered by the host's monotonic time of their first record";

/// Now, UTC, RFC 3339 to the second.
fn utc_now() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}
