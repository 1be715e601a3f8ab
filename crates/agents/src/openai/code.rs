//! Showing code to the model: a chat model cannot read files, so a code task's prompt shows
//! the files the task names (all of them in a small repository) and lists the rest.

use std::path::Path;

use super::patch::{git, refusal};
use crate::TaskInput;

/// Room in the prompt for the code of a code task: file contents…
pub(super) const CODE_BUDGET: usize = 64 * 1024;
/// … and the listing of the files not shown.
pub(super) const LISTING_BUDGET: usize = 24 * 1024;
/// A file larger than this is listed, not shown.
pub(super) const CODE_FILE_LIMIT: usize = 32 * 1024;

/// The files of `workdir` (tracked and untracked, not ignored), or of the task's code tree
/// when git cannot list them; never `.git` or `.tlv4`.
pub(super) fn code_files(input: &TaskInput, workdir: &Path) -> Vec<String> {
    let listed = git(workdir)
        .args([
            "ls-files",
            "-z",
            "--cached",
            "--others",
            "--exclude-standard",
        ])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| {
            String::from_utf8_lossy(&o.stdout)
                .split('\0')
                .filter(|p| !p.is_empty())
                .map(str::to_owned)
                .collect::<Vec<_>>()
        });
    let mut files =
        listed.unwrap_or_else(|| input.code.files().iter().map(|f| f.path.clone()).collect());
    files.retain(|p| refusal(p).is_none());
    files.sort();
    files.dedup();
    files
}

/// The code a code task sees: the text files `prompt` names (all of them when the repository
/// is small), within [`CODE_BUDGET`], and a listing of the rest.
pub(super) fn code_section(
    input: &TaskInput,
    workdir: &Path,
    prompt: &str,
    code_budget: usize,
    listing_budget: usize,
) -> String {
    let file_limit = CODE_FILE_LIMIT.min(code_budget);
    let files = code_files(input, workdir);
    // Regular files only: a symlink might point anywhere.
    let sizes: Vec<Option<u64>> = files
        .iter()
        .map(|p| {
            std::fs::symlink_metadata(workdir.join(p))
                .ok()
                .filter(|m| m.is_file())
                .map(|m| m.len())
        })
        .collect();
    let total: u64 = sizes.iter().flatten().sum();
    let mut order: Vec<usize> = if total as usize <= code_budget {
        (0..files.len()).collect()
    } else {
        let mut named: Vec<(usize, usize)> = files
            .iter()
            .enumerate()
            .filter(|(_, p)| p.len() >= 3)
            .filter_map(|(i, p)| prompt.find(p.as_str()).map(|at| (at, i)))
            .collect();
        named.sort();
        named.into_iter().map(|(_, i)| i).collect()
    };
    let mut used = 0;
    let mut shown = vec![false; files.len()];
    let mut body = String::new();
    order.retain(|&i| sizes[i].is_some_and(|s| s as usize <= file_limit));
    for i in order {
        let Ok(bytes) = std::fs::read(workdir.join(&files[i])) else {
            continue;
        };
        let Ok(text) = String::from_utf8(bytes) else {
            continue;
        };
        if text.contains('\0') || used + text.len() > code_budget {
            continue;
        }
        used += text.len();
        shown[i] = true;
        body.push_str(&format!("## {}\n\n", files[i]));
        body.push_str(&fenced(&text));
        body.push('\n');
    }
    let mut out = String::from("# The code\n\n");
    let n = shown.iter().filter(|s| **s).count();
    if files.is_empty() {
        out.push_str("The repository has no files yet.\n\n");
        return out;
    }
    out.push_str(&format!(
        "The repository has {} files. {n} of them are shown in full here (the ones the task \
         names, or all of them when the repository is small), exactly as they are now; the \
         others are only listed.\n\n",
        files.len()
    ));
    out.push_str(&body);
    let mut listing = String::new();
    let mut left = 0;
    for (i, p) in files.iter().enumerate().filter(|(i, _)| !shown[*i]) {
        let line = match sizes[i] {
            Some(s) => format!("- {p} ({s} bytes)\n"),
            None => format!("- {p}\n"),
        };
        if listing.len() + line.len() > listing_budget {
            left += 1;
        } else {
            listing.push_str(&line);
        }
    }
    if !listing.is_empty() {
        out.push_str("## Other files (not shown)\n\n");
        out.push_str(&listing);
        if left > 0 {
            out.push_str(&format!("- … and {left} more\n"));
        }
        out.push('\n');
    }
    out
}

/// `text` in a fenced block whose fence no line of it can close.
pub(super) fn fenced(text: &str) -> String {
    let fence = tlv4_core::text::fence(text, 3);
    format!("{fence}\n{}\n{fence}\n", text.trim_end_matches('\n'))
}
