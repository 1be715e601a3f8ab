//! All output goes through here: data to stdout, status, warnings and hints to stderr.

use std::io::Write;

/// The terminal, as the commands see it.
#[derive(Debug, Default)]
pub struct Ui {
    quiet: bool,
    /// The session that commands in status lines and hints must name (see
    /// [`crate::cli::with_session`]), once a command knows it.
    session: std::sync::Mutex<Option<String>>,
}

impl Ui {
    /// A Ui that prints status lines unless `quiet`.
    pub fn new(quiet: bool) -> Ui {
        Ui {
            quiet,
            session: Default::default(),
        }
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
            Some(sid) => crate::cli::with_session(text, sid),
            None => text.to_owned(),
        }
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

    /// An error on stderr, git style, with its hints.
    pub fn error(&self, err: &crate::Error) {
        err_line(&format!("error: {err}"));
        for h in err.hints() {
            self.hint(h);
        }
    }
}

/// One line on stderr. A failed write is dropped: after a hang-up the terminal is gone, and
/// the exit code must still say what happened (`eprintln!` would panic).
fn err_line(text: &str) {
    let _ = writeln!(std::io::stderr().lock(), "{text}");
}
