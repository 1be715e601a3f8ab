//! All output goes through here: data to stdout, status, warnings and hints to stderr.
//!
//! Long reports (`log`, `status`) go through the user's pager on a terminal, chosen as git
//! chooses it, so that `git tlv4 log` behaves as `git log`. Run as `git tlv4`, git has done
//! most of it already: `pager.tlv4 = true` (or `git -p`) makes git start the pager and set
//! `GIT_PAGER_IN_USE`, and `git -P` or `pager.tlv4 = false` set `GIT_PAGER=cat`. What is
//! left here: `git var GIT_PAGER` (`GIT_PAGER`, `core.pager`, `PAGER`, then `less`), no
//! pager when it is `cat` or empty, when one already runs, off a terminal, with
//! `--no-pager`, and with `pager.tlv4 = false` when run as `git-tlv4` directly.

mod address;

pub use address::with_session;

use std::io::{IsTerminal, Write};
use std::path::Path;

/// The terminal, as the commands see it.
#[derive(Debug, Default)]
pub struct Ui {
    quiet: bool,
    no_pager: bool,
    /// The session that commands in status lines and hints must name (see
    /// [`with_session`]), once a command knows it.
    session: std::sync::Mutex<Option<String>>,
}

impl Ui {
    /// A Ui that prints status lines unless `quiet`.
    pub fn new(quiet: bool) -> Ui {
        Ui {
            quiet,
            no_pager: false,
            session: Default::default(),
        }
    }

    /// This Ui, never starting a pager when `no_pager` (`--no-pager`).
    pub fn with_no_pager(mut self, no_pager: bool) -> Ui {
        self.no_pager = no_pager;
        self
    }

    /// A long report on stdout, through the user's pager when stdout is a terminal (see the
    /// module comment); the repository at `cwd` gives git's configuration. A pager that
    /// cannot start leaves the text printed as it is.
    pub fn page(&self, cwd: &Path, text: impl AsRef<str>) {
        let text = text.as_ref();
        let pager = if self.no_pager || !std::io::stdout().is_terminal() {
            None
        } else {
            pager(cwd)
        };
        let Some(pager) = pager else {
            return self.out(text);
        };
        let mut cmd = std::process::Command::new("sh");
        cmd.args(["-c", &pager])
            .current_dir(cwd)
            .env("GIT_PAGER_IN_USE", "true")
            .env("LESS", std::env::var("LESS").unwrap_or("FRX".into()))
            .env("LV", std::env::var("LV").unwrap_or("-c".into()))
            .stdin(std::process::Stdio::piped());
        // SAFETY: the closure runs in the forked child before exec and calls only
        // sigemptyset and pthread_sigmask, which are async-signal-safe.
        unsafe {
            std::os::unix::process::CommandExt::pre_exec(&mut cmd, || {
                // The tool blocks SIGINT, SIGTERM and SIGHUP in its threads and a child
                // inherits the mask: the pager must get them (a closed terminal ends it).
                tlv4_core::host::unblock_all_signals()
            });
        }
        let child = cmd.spawn();
        let Ok(mut child) = child else {
            return self.out(text);
        };
        if let Some(mut stdin) = child.stdin.take() {
            // The user may quit the pager before reading it all: that is no error.
            let _ = writeln!(stdin, "{text}");
        }
        let _ = child.wait();
    }

    /// From now on, the commands in status lines and hints name session `sid`.
    pub fn address_session(&self, sid: &str) {
        if let Ok(mut s) = self.session.lock() {
            *s = Some(sid.to_owned());
        }
    }

    /// `text` with its commands naming the session set by [`Ui::address_session`].
    fn addressed(&self, text: &str) -> String {
        match self
            .session
            .lock()
            .ok()
            .as_deref()
            .and_then(Option::as_deref)
        {
            Some(sid) => with_session(text, sid),
            None => text.to_owned(),
        }
    }

    /// Whether status lines go to a terminal, where someone reads them as they come (and not
    /// to a log or a test).
    pub fn on_terminal(&self) -> bool {
        !self.quiet && std::io::stderr().is_terminal()
    }

    /// Whether status lines are suppressed.
    pub fn is_quiet(&self) -> bool {
        self.quiet
    }

    /// Data: tables, ids, JSON. Always printed.
    pub fn out(&self, text: impl AsRef<str>) {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{}", text.as_ref());
    }

    /// Data as bytes (a script, a page), exactly as given; the error when stdout refuses it.
    pub fn out_bytes(&self, bytes: &[u8]) -> std::io::Result<()> {
        let mut out = std::io::stdout().lock();
        out.write_all(bytes)?;
        out.flush()
    }

    /// A value as pretty JSON on stdout.
    pub fn json(&self, value: &impl serde::Serialize) {
        match serde_json::to_string_pretty(value) {
            Ok(s) => self.out(s),
            Err(e) => self.warn(format!("cannot render JSON: {e}")),
        }
    }

    /// A status line on stderr (suppressed by `--quiet`).
    pub fn status(&self, text: impl AsRef<str>) {
        if !self.quiet {
            err_line(&self.addressed(text.as_ref()));
        }
    }

    /// A warning on stderr.
    pub fn warn(&self, text: impl AsRef<str>) {
        err_line(&format!("warning: {}", self.addressed(text.as_ref())));
    }

    /// A hint on stderr.
    pub fn hint(&self, text: impl AsRef<str>) {
        for line in text.as_ref().lines() {
            err_line(&format!("hint: {}", self.addressed(line)));
        }
    }

    /// A question to the user at a terminal: `context` (lines that explain it) and `question`
    /// on stderr, then one line read from stdin, trimmed. `None` off a terminal (stdin or
    /// stderr not one), where nothing is asked, or when nothing could be read.
    pub fn ask(&self, context: &str, question: &str) -> Option<String> {
        if !(std::io::stdin().is_terminal() && std::io::stderr().is_terminal()) {
            return None;
        }
        let mut err = std::io::stderr().lock();
        for line in context.lines() {
            let _ = writeln!(err, "{line}");
        }
        let _ = write!(err, "{question} ");
        let _ = err.flush();
        drop(err);
        let mut line = String::new();
        std::io::stdin().read_line(&mut line).ok()?;
        Some(line.trim().to_owned())
    }

    /// An error on stderr, git style, with its hints.
    pub fn error(&self, err: &tlv4_core::Error) {
        err_line(&format!("error: {err}"));
        for h in err.hints() {
            self.hint(h);
        }
    }
}

/// The pager command for a report, as git would choose it for `git tlv4`, or `None`.
fn pager(cwd: &Path) -> Option<String> {
    if std::env::var_os("GIT_PAGER_IN_USE").is_some_and(|v| !v.is_empty()) {
        return None;
    }
    // `pager.tlv4`: git applies it before running `git-tlv4`; run directly, this does.
    let configured = tlv4_core::git::output(cwd, &["config", "--get", "pager.tlv4"])
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned());
    let command = match configured.as_deref() {
        Some("false" | "no" | "off" | "0") => return None,
        Some("true" | "yes" | "on" | "1") | None => {
            let out = tlv4_core::git::output(cwd, &["var", "GIT_PAGER"]).ok()?;
            String::from_utf8_lossy(&out.stdout).trim().to_owned()
        }
        Some(other) => other.to_owned(),
    };
    (!command.is_empty() && command != "cat").then_some(command)
}

/// One line on stderr. A failed write is dropped: after a hang-up the terminal is gone, and
/// the exit code must still say what happened (`eprintln!` would panic).
fn err_line(text: &str) {
    let _ = writeln!(std::io::stderr().lock(), "{text}");
}
