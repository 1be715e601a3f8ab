//! The result contract: the last section of every prompt, saying how the agent hands its
//! result back. Its text is the template `specs/templates/result-contract.md` (minijinja,
//! with `code` true for a code task), embedded in the binary and replaced, like the other
//! templates, by the repository's `.tlv4/specs/templates/result-contract.md`; it is rendered
//! once for each kind of task when the specs are loaded, so a broken override fails there,
//! naming its file.

use std::sync::LazyLock;

use tlv4_core::error::{Error, Result};

/// The contract's name among the templates (`templates/result-contract.md` in `roles.lock`).
pub(super) const NAME: &str = "result-contract";
/// The embedded template.
pub(super) const BUILTIN: &str = include_str!("../../../../specs/templates/result-contract.md");

/// The result contract, rendered for code tasks and for document tasks.
#[derive(Debug, Clone, PartialEq)]
pub struct Contract {
    code: String,
    document: String,
}

impl Contract {
    /// The contract of the embedded template.
    pub fn builtin() -> &'static Contract {
        static BUILTIN_CONTRACT: LazyLock<Contract> = LazyLock::new(|| {
            Contract::render(BUILTIN, "specs/templates/result-contract.md")
                .unwrap_or_else(|e| panic!("the builtin result contract: {e}"))
        });
        &BUILTIN_CONTRACT
    }

    /// The contract of template `text` (the file `path`, for errors).
    pub(super) fn render(text: &str, path: &str) -> Result<Contract> {
        let env = crate::builtin::template::text_environment(true);
        let invalid = |e: minijinja::Error| {
            Error::Invalid(format!("{path}: the result contract's template: {e:#}"))
        };
        let template = env.template_from_str(text).map_err(invalid)?;
        let kind = |code: bool| {
            template
                .render(minijinja::context! { code })
                .map_err(invalid)
        };
        Ok(Contract {
            code: kind(true)?,
            document: kind(false)?,
        })
    }

    /// The section for a code task (`code`) or a document task.
    pub fn text(&self, code: bool) -> &str {
        if code { &self.code } else { &self.document }
    }
}
