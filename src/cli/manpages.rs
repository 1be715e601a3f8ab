//! `git tlv4 install-man-pages [DIR]`: man pages for `git-tlv4` and each of its commands,
//! made from the command line's own definition (clap_mangen), so that `git tlv4 --help` and
//! `git help tlv4` (which run `man git-tlv4`) find them.
//!
//! The default directory is `share/man` beside the directory that holds the executable
//! (`~/.cargo/share/man` after `cargo install`): man-db and mandoc look for the man pages of
//! each directory of `PATH` there, and the executable's directory is on `PATH` since git
//! finds `git-tlv4` through it. No root, no `MANPATH` to set.

use std::path::{Path, PathBuf};

use tlv4_core::error::{Error, Result};

use super::Ctx;

/// Arguments of `install-man-pages`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The man directory to install into (pages go to DIR/man1); default: share/man beside
    /// the directory of this executable, where man finds it through PATH
    #[arg(value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

pub(crate) fn run(ctx: &Ctx<'_>, args: Args) -> Result<()> {
    let root = match args.dir {
        Some(d) => std::path::absolute(&d)
            .map_err(|e| Error::io(format!("cannot resolve `{}`", d.display()), e))?,
        None => default_dir()?,
    };
    let man1 = root.join("man1");
    std::fs::create_dir_all(&man1).map_err(|e| {
        Error::io(
            format!("cannot create the man directory `{}`", man1.display()),
            e,
        )
    })?;
    let pages = pages();
    for (name, text) in &pages {
        write_page(&man1.join(name), text)?;
    }
    ctx.ui.status(format!(
        "installed {} man pages in {}",
        pages.len(),
        man1.display()
    ));
    ctx.ui.out(man1.display().to_string());
    if !on_manpath(&root) {
        ctx.ui.hint(format!(
            "man does not look in {} yet: add it to MANPATH (`export MANPATH=\"{}:$MANPATH\"`; the trailing `:` keeps the system's pages)",
            root.display(),
            root.display()
        ));
    }
    Ok(())
}

/// `share/man` beside the directory of the running executable.
fn default_dir() -> Result<PathBuf> {
    let exe = std::env::current_exe()
        .map_err(|e| Error::io("cannot find the path of this executable", e))?;
    let exe = exe.canonicalize().unwrap_or(exe);
    let bin = exe
        .parent()
        .ok_or_else(|| Error::Invalid(format!("`{}` is in no directory", exe.display())))?;
    Ok(bin.parent().unwrap_or(bin).join("share/man"))
}

/// Writes one page through a temporary file renamed over it: a page is whole or absent.
fn write_page(path: &Path, text: &str) -> Result<()> {
    let dir = path.parent().expect("a page is in man1");
    let cannot = |e| Error::io(format!("cannot write `{}`", path.display()), e);
    let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(cannot)?;
    std::io::Write::write_all(&mut tmp, text.as_bytes()).map_err(cannot)?;
    tmp.persist(path).map_err(|e| cannot(e.error))?;
    Ok(())
}

/// Whether `manpath` (man-db's) lists `root`; true when there is no `manpath` to ask, since
/// then nothing can be said.
fn on_manpath(root: &Path) -> bool {
    let Ok(out) = std::process::Command::new("manpath")
        .stderr(std::process::Stdio::null())
        .output()
    else {
        return true;
    };
    let root = root.canonicalize().unwrap_or(root.to_owned());
    String::from_utf8_lossy(&out.stdout)
        .trim()
        .split(':')
        .any(|d| Path::new(d).canonicalize().ok().as_deref() == Some(root.as_path()))
}

/// Every page, `(file name, roff text)`: `git-tlv4.1` with the exit codes, and one per
/// command and subcommand (`git-tlv4-task-claim.1`), hidden ones left out.
pub(super) fn pages() -> Vec<(String, String)> {
    fn walk(cmd: &clap::Command, out: &mut Vec<(String, String)>, top: bool) {
        for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
            walk(sub, out, false);
        }
        let man = clap_mangen::Man::new(cmd.clone());
        let mut text = Vec::new();
        man.render(&mut text)
            .expect("writing to memory cannot fail");
        if top {
            text.extend_from_slice(exit_status().as_bytes());
        }
        // An ellipsis in the help text: groff without a UTF-8 locale has no glyph for it.
        let text = String::from_utf8(text)
            .expect("roff is text")
            .replace('…', "...");
        out.push((man.get_filename(), text));
    }
    let mut cmd = super::command().disable_help_subcommand(true);
    cmd.build();
    let mut out = Vec::new();
    walk(&cmd, &mut out, true);
    out.reverse();
    out
}

/// The EXIT STATUS section: the rows of the README's table of exit codes, the one place they
/// are described (a unit test of `error.rs` checks it lists every code).
fn exit_status() -> String {
    let mut roff = roff::Roff::new();
    roff.control("SH", ["EXIT STATUS"]);
    for (code, meaning) in exit_rows(include_str!("../../README.md")) {
        roff.control("TP", [])
            .text([roff::bold(code)])
            .text([roff::roman(meaning)]);
    }
    roff.render()
}

/// The `(code, meaning)` rows of the `## Exit codes` table of `readme`, Markdown taken out.
fn exit_rows(readme: &str) -> Vec<(String, String)> {
    let Some(start) = readme.find("## Exit codes") else {
        return Vec::new();
    };
    readme[start..]
        .lines()
        .skip(1)
        .take_while(|l| !l.starts_with("## "))
        .filter_map(|l| {
            let cells: Vec<&str> = l
                .trim()
                .strip_prefix('|')?
                .strip_suffix('|')?
                .split(" | ")
                .collect();
            let [code, meaning] = cells.as_slice() else {
                return None;
            };
            let code = code.trim();
            code.parse::<i32>()
                .ok()
                .map(|_| (code.to_owned(), plain(meaning.trim())))
        })
        .collect()
}

/// Markdown inline text as plain text: code spans and links lose their marks.
fn plain(md: &str) -> String {
    let mut out = md.replace('`', "");
    // `[text](target)` → `text`
    while let Some(open) = out.find("](") {
        let Some(close) = out[open..].find(')') else {
            break;
        };
        let Some(start) = out[..open].rfind('[') else {
            break;
        };
        let text = out[start + 1..open].to_owned();
        out.replace_range(start..open + close + 1, &text);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_exit_status_section_has_every_code_of_the_readme() {
        let rows = exit_rows(include_str!("../../README.md"));
        let codes: Vec<&str> = rows.iter().map(|(c, _)| c.as_str()).collect();
        for code in [
            "0", "1", "2", "3", "4", "5", "6", "129", "130", "143", "255",
        ] {
            assert!(codes.contains(&code), "{code} missing from {codes:?}");
        }
        assert!(rows.iter().all(|(_, m)| !m.contains('`')), "{rows:?}");
    }

    #[test]
    fn markdown_links_and_code_become_plain_text() {
        assert_eq!(
            plain("see [src/error.rs](src/error.rs), run `git tlv4 resume`"),
            "see src/error.rs, run git tlv4 resume"
        );
    }

    #[test]
    fn every_command_has_a_page() {
        let names: Vec<String> = pages().into_iter().map(|(n, _)| n).collect();
        for n in ["git-tlv4.1", "git-tlv4-start.1", "git-tlv4-task-claim.1"] {
            assert!(names.contains(&n.to_owned()), "{n} missing from {names:?}");
        }
        assert!(!names.iter().any(|n| n.contains("__complete")), "{names:?}");
    }
}
