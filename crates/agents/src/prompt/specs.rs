//! Where the texts of a prompt come from: the role instructions (`specs/roles/*.md`), the
//! document templates and the result contract (`specs/templates/*.md`), embedded in the
//! binary, each replaced by the repository's `.tlv4/specs/…` file where the configuration
//! (a working tree's, or a session's pinned one) has it; and `roles.lock`, which lists the
//! ones a session runs with.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::path::Path;

use super::contract::{self, Contract};
use tlv4_core::error::Result;

/// Where a repository puts its own role instructions.
pub const ROLE_OVERRIDE_DIR: &str = ".tlv4/specs/roles";
/// Where a repository puts its own templates.
pub const TEMPLATE_OVERRIDE_DIR: &str = ".tlv4/specs/templates";

/// The instructions of the builtin roles (every [`Role`] but `Other`).
const BUILTIN_ROLES: [(&str, &str); 10] = [
    (
        "analyst",
        include_str!("../../../../specs/roles/analyst.md"),
    ),
    ("critic", include_str!("../../../../specs/roles/critic.md")),
    ("member", include_str!("../../../../specs/roles/member.md")),
    (
        "moderator",
        include_str!("../../../../specs/roles/moderator.md"),
    ),
    ("writer", include_str!("../../../../specs/roles/writer.md")),
    (
        "planner",
        include_str!("../../../../specs/roles/planner.md"),
    ),
    (
        "executor",
        include_str!("../../../../specs/roles/executor.md"),
    ),
    ("tester", include_str!("../../../../specs/roles/tester.md")),
    (
        "reviewer",
        include_str!("../../../../specs/roles/reviewer.md"),
    ),
    (
        "supervisor",
        include_str!("../../../../specs/roles/supervisor.md"),
    ),
];

const BUILTIN_TEMPLATES: [(&str, &str); 5] = [
    (
        "product-brief",
        include_str!("../../../../specs/templates/product-brief.md"),
    ),
    (
        "requirements",
        include_str!("../../../../specs/templates/requirements.md"),
    ),
    (
        "architecture",
        include_str!("../../../../specs/templates/architecture.md"),
    ),
    (
        "epics",
        include_str!("../../../../specs/templates/epics.md"),
    ),
    (contract::NAME, contract::BUILTIN),
];

/// Where a spec text came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// Embedded in the binary.
    Builtin,
    /// The repository's `.tlv4/specs/…` file.
    Repository,
}

/// The role instructions, document templates and result contract prompts are built from.
#[derive(Debug, Clone, PartialEq)]
pub struct RoleSpecs {
    roles: BTreeMap<String, (String, Origin)>,
    /// The document templates by phase, and the contract's template under [`contract::NAME`].
    templates: BTreeMap<String, (String, Origin)>,
    /// The contract's template, rendered.
    contract: Contract,
}

impl RoleSpecs {
    /// The embedded instructions and templates.
    pub fn builtin() -> RoleSpecs {
        let own = |list: &[(&str, &str)]| {
            list.iter()
                .map(|(k, v)| ((*k).to_owned(), ((*v).to_owned(), Origin::Builtin)))
                .collect()
        };
        RoleSpecs {
            roles: own(&BUILTIN_ROLES),
            templates: own(&BUILTIN_TEMPLATES),
            contract: Contract::builtin().clone(),
        }
    }

    /// The embedded ones, each replaced by the repository's `.tlv4/specs/roles/<role>.md` or
    /// `.tlv4/specs/templates/<name>.md` where that exists (extra roles, such as specialists,
    /// may be added the same way).
    pub fn load(repo_root: &Path) -> Result<RoleSpecs> {
        RoleSpecs::from_files(&tlv4_core::trust::Files::read(repo_root)?)
    }

    /// [`RoleSpecs::load`] from a repository configuration (a working tree's or a session's
    /// pinned one).
    pub fn from_files(files: &tlv4_core::trust::Files) -> Result<RoleSpecs> {
        let mut specs = RoleSpecs::builtin();
        for (dir, map) in [
            (ROLE_OVERRIDE_DIR, &mut specs.roles),
            (TEMPLATE_OVERRIDE_DIR, &mut specs.templates),
        ] {
            for (file, bytes) in files.in_dir(dir) {
                let Some(name) = file.strip_suffix(".md") else {
                    continue;
                };
                let path = format!("{dir}/{file}");
                let text = tlv4_core::config::utf8(Path::new(&path), bytes)?;
                map.insert(name.to_owned(), (text.to_owned(), Origin::Repository));
            }
        }
        if let Some((text, Origin::Repository)) = specs.templates.get(contract::NAME) {
            let path = format!("{TEMPLATE_OVERRIDE_DIR}/{}.md", contract::NAME);
            specs.contract = Contract::render(text, &path)?;
        }
        Ok(specs)
    }

    /// The instructions of `role`; roles without a file of their own (specialists) get a
    /// short generic text.
    pub fn role(&self, role: &str) -> Cow<'_, str> {
        match self.roles.get(role) {
            Some((text, _)) => Cow::Borrowed(text),
            None => Cow::Owned(format!(
                "You are the `{role}` specialist of a software team. Look at the change from your \
                 specialty's angle only: read the files the task names, point at the lines that \
                 matter with the reason, and say how sure you are. Do not change code. Write your \
                 report as `artifacts/<TASK>-report.md` in `files`.\n"
            )),
        }
    }

    /// Where the instructions of `role` come from, if it has its own.
    #[cfg(test)]
    pub fn origin(&self, role: &str) -> Option<Origin> {
        self.roles.get(role).map(|(_, o)| *o)
    }

    /// The template for a writer task of `phase` (`product-brief`, `requirements`, …).
    pub fn template(&self, phase: &str) -> Option<&str> {
        self.templates
            .get(phase)
            .filter(|_| phase != contract::NAME)
            .map(|(t, _)| t.as_str())
    }

    /// The result contract every prompt ends with.
    pub fn contract(&self) -> &Contract {
        &self.contract
    }
}

/// The `roles.lock` of a session: one line per role instruction and template, with its git
/// blob id (what `git hash-object` prints for the file) and where it came from. The same
/// specs always give the same text. `hash` is the repository's object format.
pub fn roles_lock(specs: &RoleSpecs, hash: gix::hash::Kind) -> String {
    let mut out = String::from(
        "# The role instructions and templates this session's prompts are built from.\n\
         # <git blob id> <path> <builtin|repository>; `git hash-object <file>` gives the id.\n",
    );
    for (dir, map) in [("roles", &specs.roles), ("templates", &specs.templates)] {
        for (name, (text, origin)) in map {
            let id = tlv4_core::git::blob_id(hash, text.as_bytes())
                .map_or_else(|| "0".repeat(hash.len_in_hex()), |id| id.to_string());
            let origin = match origin {
                Origin::Builtin => "builtin",
                Origin::Repository => "repository",
            };
            out.push_str(&format!("{id} {dir}/{name}.md {origin}\n"));
        }
    }
    out
}
