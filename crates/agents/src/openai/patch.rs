//! The change of a code task: the one unified diff an answer carries, refused when it
//! touches `.git/` or `.tlv4/` or leaves the tree, and applied with `git apply`.

use std::path::Path;
use std::process::Command;

use super::OpenAiDriver;
use crate::TaskOutput;
use tlv4_core::error::Error;

/// How many answers may carry a diff that does not apply.
pub(super) const PATCH_TRIES: u32 = 2;

/// How a code task hands over its change.
pub(super) const HANDOVER: &str = "# How to hand over your change\n\n\
    You cannot edit files here, so the instructions above about changing the files of your \
    working directory mean this: give your whole change as ONE unified diff (the format of \
    `git diff`) in a fenced code block tagged `diff`, then end your answer with the result \
    block.\n\n\
    - Paths are relative to the repository root, with `a/` and `b/` prefixes: \
    `--- a/src/lib.rs` and `+++ b/src/lib.rs`. A new file has `--- /dev/null`, a deleted one \
    `+++ /dev/null`.\n\
    - Copy the context lines and the removed lines exactly from the files shown under \"The \
    code\": git-tlv4 applies the diff with `git apply`, and a diff that does not apply is sent \
    back once.\n\
    - Never touch `.git/` or `.tlv4/`.\n\
    - List the files the diff changes in `files_modified`. If no change is needed, send no \
    diff and leave `files_modified` empty.\n";

impl OpenAiDriver {
    /// Applies the diff of a code task's answer in `workdir`. `Ok` when it applied (or no
    /// change was needed); the problem otherwise.
    pub(super) fn hand_over(
        &self,
        text: &str,
        output: &mut TaskOutput,
        workdir: &Path,
        scratch: &Path,
        answer_no: u32,
        log: &mut String,
    ) -> std::result::Result<(), Handover> {
        let patch = extract_patch(text).map_err(Handover::Patch)?;
        let Some(patch) = patch else {
            return if output.state_update.files_modified.is_empty() {
                Ok(())
            } else {
                Err(Handover::NoPatch)
            };
        };
        let file = scratch.join(format!("patch-{answer_no}.diff"));
        std::fs::write(&file, &patch).map_err(|e| {
            Handover::Local(Error::io(format!("cannot write {}", file.display()), e))
        })?;
        let paths = patch_paths(workdir, &file).map_err(|e| {
            log.push_str(&format!("--- git apply --numstat ---\n{e}\n"));
            Handover::Patch(format!("git cannot read your diff: {e}"))
        })?;
        for p in &paths {
            if let Some(why) = refusal(p) {
                log.push_str(&format!("--- refused ---\n{p}: {why}\n"));
                return Err(Handover::Patch(format!(
                    "your diff touches `{p}`, which {why}; nothing was applied"
                )));
            }
        }
        git_apply(workdir, &file).map_err(|e| {
            log.push_str(&format!("--- git apply ---\n{e}\n"));
            Handover::Patch(format!("your diff does not apply: {e}"))
        })?;
        log.push_str(&format!(
            "--- git apply ---\napplied: {}\n",
            paths.join(", ")
        ));
        if !paths.is_empty() {
            output.state_update.files_modified = paths;
        }
        Ok(())
    }
}

/// Why the change of a code task's answer was not applied.
pub(super) enum Handover {
    /// The answer lists changed files but carries no diff.
    NoPatch,
    /// The diff is refused or does not apply; worded for the agent.
    Patch(String),
    /// A local failure (the run directory).
    Local(Error),
}

/// when there is none; the problem when a block is not closed.
pub(super) fn extract_patch(text: &str) -> std::result::Result<Option<String>, String> {
    let mut patch = String::new();
    let mut found = false;
    let mut lines = text.split_inclusive('\n');
    while let Some(line) = lines.next() {
        let l = line.trim_end();
        let ticks = l.chars().take_while(|&c| c == '`').count();
        if ticks < 3 {
            continue;
        }
        let info = l[ticks..].trim();
        let is_diff = info
            .split_whitespace()
            .next()
            .is_some_and(|w| ["diff", "patch", "udiff"].contains(&w.to_ascii_lowercase().as_str()));
        let mut body = String::new();
        let mut closed = false;
        for inner in lines.by_ref() {
            let t = inner.trim_end();
            if t.len() >= ticks && t.chars().all(|c| c == '`') {
                closed = true;
                break;
            }
            body.push_str(inner);
        }
        if !is_diff {
            continue;
        }
        if !closed {
            return Err(
                "the ```diff block is not closed; the answer may have been cut off — \
                        end the block with a line of three backticks"
                    .to_owned(),
            );
        }
        if !body.trim().is_empty() {
            found = true;
            patch.push_str(&body);
            if !patch.ends_with('\n') {
                patch.push('\n');
            }
        }
    }
    Ok(found.then_some(patch))
}

/// Why the diff may not touch `path` (relative to the repository root), if it may not.
pub(super) fn refusal(path: &str) -> Option<&'static str> {
    let mut parts = path.split('/').filter(|c| !c.is_empty() && *c != ".");
    if path.starts_with('/') || path.contains('\\') || path.contains('\0') {
        return Some("is not a path inside the repository");
    }
    if parts.clone().any(|c| c == "..") {
        return Some("is outside the repository");
    }
    if parts.clone().any(|c| c.eq_ignore_ascii_case(".git")) {
        return Some("belongs to git (`.git`)");
    }
    if parts
        .next()
        .is_some_and(|c| c.eq_ignore_ascii_case(".tlv4"))
    {
        return Some("belongs to git-tlv4 (`.tlv4/`)");
    }
    None
}

/// `git` in `dir`, with no git location inherited from the environment.
pub(super) fn git(dir: &Path) -> Command {
    tlv4_core::git::command(dir)
}

/// Every path the diff in `patch` touches, as git reads it (both sides of a rename).
pub(super) fn patch_paths(
    workdir: &Path,
    patch: &Path,
) -> std::result::Result<Vec<String>, String> {
    let out = git(workdir)
        .args(["apply", "--numstat", "-z", "--recount"])
        .arg(patch)
        .output()
        .map_err(|e| format!("cannot run git: {e}"))?;
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).trim().to_owned());
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let mut tokens = text.split('\0');
    let mut paths = Vec::new();
    while let Some(t) = tokens.next() {
        if t.is_empty() {
            continue;
        }
        match t.splitn(3, '\t').nth(2) {
            Some(p) if !p.is_empty() => paths.push(p.to_owned()),
            // A rename or copy: the two paths follow.
            _ => paths.extend(tokens.by_ref().take(2).map(str::to_owned)),
        }
    }
    let mut seen = std::collections::BTreeSet::new();
    paths.retain(|p| seen.insert(p.clone()));
    Ok(paths)
}

/// Applies `patch` in `workdir` (all of it or nothing); git's complaint otherwise.
pub(super) fn git_apply(workdir: &Path, patch: &Path) -> std::result::Result<(), String> {
    let out = git(workdir)
        .args(["apply", "--whitespace=nowarn", "--recount"])
        .arg(patch)
        .output()
        .map_err(|e| format!("cannot run git: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        let err = String::from_utf8_lossy(&out.stderr).trim().to_owned();
        Err(if err.is_empty() {
            format!("git apply failed ({})", out.status)
        } else {
            err
        })
    }
}
