//! Records the git commit the library is built from (`VMLAB_GIT_COMMIT`), for the provenance
//! of every report: the commit's hash, with `-dirty` when tracked files differ from it, or
//! `unknown` when the source is not a git checkout (a crates.io package, a tarball) or git is
//! not installed.

use std::path::Path;
use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn main() {
    let commit = git(&["rev-parse", "HEAD"]).filter(|c| !c.is_empty());
    let described = match &commit {
        Some(hash) => {
            // `diff-index` compares tracked files with HEAD (untracked files do not count).
            let dirty = Command::new("git")
                .args(["diff-index", "--quiet", "HEAD", "--"])
                .status()
                .map(|s| !s.success())
                .unwrap_or(false);
            format!("{hash}{}", if dirty { "-dirty" } else { "" })
        }
        None => "unknown".to_string(),
    };
    println!("cargo:rustc-env=VMLAB_GIT_COMMIT={described}");
    // Rerun when HEAD moves (a commit, a checkout) or the index or the sources change.
    if let Some(dir) = git(&["rev-parse", "--git-dir"]) {
        let dir = Path::new(&dir);
        for file in ["HEAD", "index"] {
            println!("cargo:rerun-if-changed={}", dir.join(file).display());
        }
        if let Some(common) = git(&["rev-parse", "--git-common-dir"]) {
            println!("cargo:rerun-if-changed={}/refs/heads", common);
            // Only if it exists: cargo takes a missing file as changed, and would rerun this
            // script, and so rebuild the crates, on every build of a fresh clone. Packing refs
            // also rewrites refs/heads, which is watched.
            let packed = Path::new(&common).join("packed-refs");
            if packed.exists() {
                println!("cargo:rerun-if-changed={}", packed.display());
            }
        }
    }
    for tree in [
        "src",
        "../vmlab-cli/src",
        "../vmlab-guest/src",
        "../../profiles",
        "../../experiments",
    ] {
        println!("cargo:rerun-if-changed={tree}");
    }
}
