//! Build script: records the commit the binary is built from, for `git tlv4 --version`.
//!
//! The source directory is asked, never whatever repository holds it: a tarball unpacked
//! inside another repository (or one without `.git`) says `unknown` rather than someone
//! else's commit. `cargo install --path .` builds in the source directory, so it sees it.

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    let dir = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    println!("cargo:rerun-if-changed=build.rs");
    let commit = commit(&dir).unwrap_or_else(|| "unknown".to_owned());
    println!("cargo:rustc-env=TLV4_BUILD_COMMIT={commit}");
}

/// The abbreviated commit `HEAD` of the repository whose top level is `dir`, and the files
/// whose change moves it (for cargo to run this script again).
fn commit(dir: &Path) -> Option<String> {
    let git = |args: &[&str]| -> Option<String> {
        let out = Command::new("git")
            .arg("-C")
            .arg(dir)
            .args(args)
            .env_remove("GIT_DIR")
            .env_remove("GIT_WORK_TREE")
            .output()
            .ok()?;
        let text = String::from_utf8(out.stdout).ok()?;
        (out.status.success() && !text.trim().is_empty()).then(|| text.trim().to_owned())
    };
    let top = PathBuf::from(git(&["rev-parse", "--show-toplevel"])?);
    if top.canonicalize().ok()? != dir.canonicalize().ok()? {
        return None;
    }
    let absolute = |p: String| {
        let p = PathBuf::from(p);
        if p.is_absolute() { p } else { dir.join(p) }
    };
    let git_dir = absolute(git(&["rev-parse", "--git-dir"])?);
    let common = absolute(git(&["rev-parse", "--git-common-dir"])?);
    // A missing file would make cargo run the script on every build: name only those there.
    let mut watch = vec![git_dir.join("HEAD"), common.join("packed-refs")];
    if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
        watch.push(common.join(branch));
    }
    for file in watch.iter().filter(|f| f.exists()) {
        println!("cargo:rerun-if-changed={}", file.display());
    }
    git(&["rev-parse", "--short=12", "HEAD"])
}
