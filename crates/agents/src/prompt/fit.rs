//! Fitting the shown files to what the budget leaves: the largest documents replaced by a
//! summary (their headings and first lines) until the rest fits, then what still does not fit
//! shared out and cut at a line end.

use std::borrow::Cow;

use super::select::Section;
use super::{cap, fenced};
use crate::TaskInput;
use crate::process::floor_char_boundary;

/// The documents of a prompt once fitted to its budget.
pub(super) struct Fitted<'a> {
    /// The files shown, in prompt order.
    pub(super) shown: Vec<&'a (Section, String)>,
    /// Each file's text, or its summary.
    pub(super) texts: Vec<Cow<'a, str>>,
    /// The files replaced by a summary, with their whole sizes, largest first.
    pub(super) summarised: Vec<(String, usize)>,
    /// The length of each text.
    pub(super) sizes: Vec<usize>,
    /// How much of each text fits.
    pub(super) caps: Vec<usize>,
}

/// Fits the shown files to `budget`: the largest are summarised until the rest fits, then
/// what still does not fit is shared out by [`water_fill`].
pub(super) fn fit<'a>(
    input: &'a TaskInput,
    shown: Vec<&'a (Section, String)>,
    budget: usize,
    folder_dir: &str,
) -> Fitted<'a> {
    let mut texts: Vec<Cow<'_, str>> = shown
        .iter()
        .map(|(_, p)| String::from_utf8_lossy(&input.folder[p]))
        .collect();
    let mut summarised: Vec<(String, usize)> = Vec::new();
    let mut total: usize = texts.iter().map(|t| t.len()).sum();
    let mut by_size: Vec<usize> = (0..texts.len()).collect();
    by_size.sort_by_key(|&i| std::cmp::Reverse(texts[i].len()));
    for i in by_size {
        if total <= budget {
            break;
        }
        let path = &shown[i].1;
        let whole = texts[i].len();
        let summary = summary(&texts[i], whole, &format!("{folder_dir}{path}"));
        if summary.len() >= whole {
            continue;
        }
        total = total - whole + summary.len();
        texts[i] = Cow::Owned(summary);
        summarised.push((path.clone(), whole));
    }
    let sizes: Vec<usize> = texts.iter().map(|t| t.len()).collect();
    let caps = water_fill(&sizes, budget);
    Fitted {
        shown,
        texts,
        summarised,
        sizes,
        caps,
    }
}

/// `# Context` and its reading order, with notes on the files summarised or cut.
pub(super) fn context_notes(fitted: &Fitted, limit: usize, folder_dir: &str) -> String {
    let mut context = String::from(
        "# Context\n\nRead it in this order: what the upstream tasks produced, then the \
         session's wisdom (lessons, decisions, conventions and known issues, newest last), then \
         the exploration cache.\n\n",
    );
    if !fitted.summarised.is_empty() {
        let list: Vec<String> = fitted
            .summarised
            .iter()
            .map(|(p, n)| format!("- {p} ({n} bytes)"))
            .collect();
        context.push_str(&format!(
            "Note: to keep this prompt within its budget of {limit} bytes, these files are shown \
             as a summary only (their headings and first lines), largest first; the whole files \
             are under `{folder_dir}`:\n{}\n\n",
            list.join("\n")
        ));
    }
    let cut: Vec<String> = fitted
        .shown
        .iter()
        .zip(&fitted.sizes)
        .zip(&fitted.caps)
        .filter(|((_, s), c)| c < s)
        .map(|(((_, p), s), c)| format!("- {p}: the first {c} of {s} bytes"))
        .collect();
    if !cut.is_empty() {
        context.push_str(&format!(
            "Note: even so, the largest were cut to keep this prompt under {limit} bytes; read \
             the whole files under `{folder_dir}`:\n{}\n\n",
            cut.join("\n")
        ));
    }
    context
}

/// The shown files under their section headings, each fenced, cut at a line end where it
/// does not fit.
pub(super) fn context_files(context: &mut String, fitted: &Fitted, folder_dir: &str) {
    let mut section = None;
    for (((sec, path), text), c) in fitted.shown.iter().zip(&fitted.texts).zip(&fitted.caps) {
        if section != Some(*sec) {
            section = Some(*sec);
            context.push_str(match sec {
                Section::Documents => "## Documents\n\n",
                Section::Wisdom => "## Wisdom\n\n",
                Section::Explorations => "## Exploration cache\n\n",
            });
        }
        context.push_str(&format!("### {path}\n\n"));
        let body = if *c < text.len() {
            let mut end = floor_char_boundary(text, *c);
            if let Some(nl) = text[..end].rfind('\n').filter(|&nl| nl >= end / 2) {
                end = nl + 1;
            }
            format!(
                "{}\n[… cut here by git-tlv4: {} of {} bytes shown; the whole file is \
                 `{folder_dir}{path}`]",
                &text[..end],
                end,
                text.len()
            )
        } else {
            text.to_string()
        };
        let lang = if fitted.summarised.iter().any(|(p, _)| p == path) {
            "text"
        } else if path.ends_with(".json") {
            "json"
        } else if path.ends_with(".md") {
            "markdown"
        } else {
            "text"
        };
        context.push_str(&fenced(body.trim_end(), lang));
        context.push('\n');
    }
}

/// Lines of a summary: the first lines of the text, then its headings.
pub(super) const SUMMARY_FIRST_LINES: usize = 6;
pub(super) const SUMMARY_HEADINGS: usize = 40;
/// The most a summary may be, in bytes.
pub(super) const SUMMARY_CAP: usize = 2 * 1024;

/// What stands for a document left out of a prompt: its size, where the whole file is, its
/// first lines and its markdown headings (lines under 200 bytes; at most [`SUMMARY_CAP`]).
pub(super) fn summary(text: &str, size: usize, path: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = format!(
        "[summary by git-tlv4: {size} bytes, {} lines; the whole file is `{path}`]\n",
        lines.len()
    );
    let first: Vec<&str> = lines
        .iter()
        .map(|l| l.trim_end())
        .filter(|l| !l.trim().is_empty())
        .take(SUMMARY_FIRST_LINES)
        .collect();
    let headings: Vec<&str> = lines
        .iter()
        .map(|l| l.trim_end())
        .filter(|l| l.starts_with('#') && l.len() < 200)
        .filter(|l| !first.contains(l))
        .take(SUMMARY_HEADINGS)
        .collect();
    out.push_str("First lines:\n");
    for l in &first {
        out.push_str(&format!("{}\n", cap(l, 200, "line")));
    }
    if !headings.is_empty() {
        out.push_str("Headings:\n");
        for h in headings {
            out.push_str(h);
            out.push('\n');
        }
    }
    if out.len() > SUMMARY_CAP {
        let end = floor_char_boundary(&out, SUMMARY_CAP);
        let end = out[..end].rfind('\n').map_or(end, |nl| nl + 1);
        out.truncate(end);
        out.push_str("[… more headings]\n");
    }
    out
}

/// How many bytes of each item fit in `budget`: everything if all fit, else the smallest
/// items whole and every larger one cut to the same size.
pub(super) fn water_fill(sizes: &[usize], budget: usize) -> Vec<usize> {
    if sizes.iter().sum::<usize>() <= budget {
        return sizes.to_vec();
    }
    let mut order: Vec<usize> = (0..sizes.len()).collect();
    order.sort_by_key(|&i| sizes[i]);
    let mut left = budget;
    let mut limit = 0;
    for (k, &i) in order.iter().enumerate() {
        let rest = sizes.len() - k;
        if sizes[i] * rest <= left {
            left -= sizes[i];
        } else {
            limit = left / rest;
            break;
        }
    }
    sizes.iter().map(|&s| s.min(limit)).collect()
}
