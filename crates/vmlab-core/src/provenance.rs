//! Where a report comes from: the vmlab version and git commit that produced it, the exact
//! command, the machine profile (by name and by a hash of its file, the overrides given on
//! top of it, and the effective profile itself, every key with the value the simulator used)
//! and the seed. Every JSON report carries one [`Provenance`], so a number can be traced
//! back and rerun from the report alone.

use crate::cost::Profile;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The provenance of a report.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Provenance {
    /// The version of vmlab (the crate's version).
    pub vmlab_version: String,
    /// The git commit vmlab was built from, with `-dirty` when tracked files differed from
    /// it at build time; `unknown` when it was not built from a git checkout.
    pub git_commit: String,
    /// The command that produced the report, each argument quoted for a POSIX shell where
    /// it needs it.
    pub command: String,
    /// The machine profile's name.
    pub machine: String,
    /// A hash of the profile's full contents ([`Profile::fingerprint_hex`]): two reports with
    /// the same one ran on the same profile file, comments included.
    pub machine_fingerprint: String,
    /// The profile keys overridden on top of that file (`vmlab run --set SECTION.KEY=VALUE`),
    /// by key, as given.
    #[serde(default)]
    pub overrides: BTreeMap<String, String>,
    /// The effective machine profile: every section and key with the value the simulator
    /// used, overrides applied (as gem5's `config.json`); [`Provenance::effective_profile`]
    /// reads it back.
    #[serde(default)]
    pub profile: serde_json::Value,
    /// The seed of the workload's random numbers (and of host fragmentation).
    pub seed: u64,
    /// The files the workload read (a recording), each identified by its contents.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub inputs: Vec<Input>,
}

/// A file a workload read, identified by its contents.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Input {
    /// The path as given.
    pub path: String,
    /// Its size in bytes.
    pub bytes: u64,
    /// A hash of its contents ([`file_fingerprint`]).
    pub fingerprint: String,
    /// What the file says of itself (a recording's header: program, host, recorder, date).
    pub header: serde_json::Value,
}

/// FNV-1a (64 bits) of a file's contents, as `fnv1a64:HEX`, read in a stream.
pub fn file_fingerprint(path: &std::path::Path) -> std::io::Result<(u64, String)> {
    use std::io::Read;
    let mut file = std::fs::File::open(path)?;
    let mut buf = vec![0u8; 1 << 16];
    let (mut hash, mut bytes) = (0xcbf2_9ce4_8422_2325u64, 0u64);
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            break;
        }
        bytes += n as u64;
        for &b in &buf[..n] {
            hash = (hash ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    Ok((bytes, format!("fnv1a64:{hash:016x}")))
}

/// The version of this build of vmlab.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The git commit of this build (see [`Provenance::git_commit`]); set by the build script.
pub const GIT_COMMIT: &str = env!("VMLAB_GIT_COMMIT");

impl Provenance {
    /// The provenance of a report made by `command` on `profile` with `seed`, by this build.
    pub fn new(command: &str, profile: &Profile, seed: u64) -> Provenance {
        Provenance {
            vmlab_version: VERSION.to_string(),
            git_commit: GIT_COMMIT.to_string(),
            command: command.to_string(),
            machine: profile.name().to_string(),
            machine_fingerprint: profile.fingerprint_hex(),
            overrides: profile.overrides().iter().cloned().collect(),
            profile: serde_json::to_value(profile).unwrap_or_default(),
            seed,
            inputs: Vec::new(),
        }
    }
}

impl Provenance {
    /// The effective profile the report was made with, read back and validated (its
    /// fingerprint is that of its canonical TOML, not the file's), or why not: a report
    /// written before reports carried their profile, or one edited by hand.
    pub fn effective_profile(&self) -> Result<Profile, String> {
        if self.profile.is_null() {
            return Err(
                "the report has no effective profile (provenance.profile): it was written by an older vmlab"
                    .to_string(),
            );
        }
        Profile::deserialize(&self.profile)
            .map_err(|e| format!("the report's profile (provenance.profile): {e}"))
    }
}

/// A command line as one string that a POSIX shell splits back into `args`: arguments made
/// only of safe characters as they are, the others in single quotes.
pub fn shell_command<I, S>(args: I) -> String
where
    I: IntoIterator<Item = S>,
    S: AsRef<str>,
{
    args.into_iter()
        .map(|a| {
            let a = a.as_ref();
            if !a.is_empty()
                && a.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c))
            {
                a.to_string()
            } else {
                format!("'{}'", a.replace('\'', r"'\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn provenance_names_the_profile_its_hash_and_the_build() {
        let profile = Profile::builtin("skylake").expect("built-in");
        let p = Provenance::new("vmlab run -w gups", &profile, 7);
        assert_eq!(p.machine, "skylake");
        assert_eq!(p.machine_fingerprint, profile.fingerprint_hex());
        assert_eq!(p.seed, 7);
        assert!(p.overrides.is_empty());
        let back = p.effective_profile().expect("reads back");
        assert_eq!(back.to_toml(), profile.to_toml());
        assert_eq!(p.vmlab_version, env!("CARGO_PKG_VERSION"));
        assert_eq!(p.command, "vmlab run -w gups");
        let hash = p.git_commit.trim_end_matches("-dirty");
        assert!(
            p.git_commit == "unknown"
                || (hash.len() == 40 && hash.chars().all(|c| c.is_ascii_hexdigit())),
            "{}",
            p.git_commit
        );
    }

    #[test]
    fn shell_command_quotes_only_what_needs_it() {
        assert_eq!(
            shell_command(["vmlab", "run", "-w", "gups:table=1G"]),
            "vmlab run -w gups:table=1G"
        );
        assert_eq!(shell_command(["a b", "", "it's"]), r"'a b' '' 'it'\''s'");
    }
}
