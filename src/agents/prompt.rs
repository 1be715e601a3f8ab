//! Prompts: what an agent CLI is told for one task.
//!
//! A prompt has five parts, always in this order: the role's instructions
//! (`specs/roles/<role>.md`), the task (its header, the user's request and the description the
//! coordinator wrote), the template of the document to write (writer tasks), the context, and
//! the result contract. The context follows the reference's loading order: first what the
//! upstream tasks produced (the discovery context, the documents the description names, the
//! documents of earlier phases the role builds on, the plan), then the session's wisdom, then
//! the exploration cache; everything else in the pipeline folder is listed by path only.
//!
//! Prompts are bounded ([`PROMPT_LIMIT`]): when the documents do not fit, the largest are cut
//! first (each keeps its beginning), and the prompt says which ones were cut and where the
//! whole files are.
//!
//! The role instructions and templates are embedded in the binary and can be replaced per
//! repository under `.tlv4/specs/roles/` and `.tlv4/specs/templates/`. [`roles_lock`] lists
//! the ones a session runs with, by git blob id, so a session's prompts can be pinned.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use super::TaskInput;
use super::command::Shell;
use super::process::floor_char_boundary;
use tlv4_core::error::Result;
use tlv4_core::model::Role;

/// The upper bound of a prompt, in bytes.
pub const PROMPT_LIMIT: usize = 256 * 1024;
/// Where a repository puts its own role instructions.
pub const ROLE_OVERRIDE_DIR: &str = ".tlv4/specs/roles";
/// Where a repository puts its own templates.
pub const TEMPLATE_OVERRIDE_DIR: &str = ".tlv4/specs/templates";
/// Room kept free in a first prompt for what a retry adds (the problem and the end of the
/// previous answer), so that retries stay within [`PROMPT_LIMIT`] too.
pub const RETRY_RESERVE: usize = 20 * 1024;
/// Words of the retry section that fake agents look for.
pub const RETRY_HEADING: &str = "# Your previous answer was not accepted";

/// The instructions of the builtin roles (every [`Role`] but `Other`).
const BUILTIN_ROLES: [(&str, &str); 10] = [
    ("analyst", include_str!("../../specs/roles/analyst.md")),
    ("critic", include_str!("../../specs/roles/critic.md")),
    ("member", include_str!("../../specs/roles/member.md")),
    ("moderator", include_str!("../../specs/roles/moderator.md")),
    ("writer", include_str!("../../specs/roles/writer.md")),
    ("planner", include_str!("../../specs/roles/planner.md")),
    ("executor", include_str!("../../specs/roles/executor.md")),
    ("tester", include_str!("../../specs/roles/tester.md")),
    ("reviewer", include_str!("../../specs/roles/reviewer.md")),
    (
        "supervisor",
        include_str!("../../specs/roles/supervisor.md"),
    ),
];

const BUILTIN_TEMPLATES: [(&str, &str); 4] = [
    (
        "product-brief",
        include_str!("../../specs/templates/product-brief.md"),
    ),
    (
        "requirements",
        include_str!("../../specs/templates/requirements.md"),
    ),
    (
        "architecture",
        include_str!("../../specs/templates/architecture.md"),
    ),
    ("epics", include_str!("../../specs/templates/epics.md")),
];

/// Caps of the parts that are never cut to make room for documents.
const ROLE_CAP: usize = 64 * 1024;
const REQUEST_CAP: usize = 8 * 1024;
const DESCRIPTION_CAP: usize = 32 * 1024;
const TEMPLATE_CAP: usize = 48 * 1024;
/// At most this many documents are shown; the rest are listed.
const MAX_DOCUMENTS: usize = 60;
/// At most this many other files are listed.
const MAX_LISTED: usize = 200;

/// Where a spec text came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// Embedded in the binary.
    Builtin,
    /// The repository's `.tlv4/specs/…` file.
    Repository,
}

/// The role instructions and document templates prompts are built from.
#[derive(Debug, Clone, PartialEq)]
pub struct RoleSpecs {
    roles: BTreeMap<String, (String, Origin)>,
    templates: BTreeMap<String, (String, Origin)>,
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
    pub fn origin(&self, role: &str) -> Option<Origin> {
        self.roles.get(role).map(|(_, o)| *o)
    }

    /// The template for a writer task of `phase` (`product-brief`, `requirements`, …).
    pub fn template(&self, phase: &str) -> Option<&str> {
        self.templates.get(phase).map(|(t, _)| t.as_str())
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

/// The prompt for `input`, with `role_spec` as the role's instructions, within
/// [`PROMPT_LIMIT`].
pub fn build_prompt(input: &TaskInput, role_spec: &str) -> String {
    compose(input, role_spec, None, PROMPT_LIMIT)
}

/// The prompt for `input` with the role's instructions, the template of the document to
/// write (if any), within `limit` bytes.
pub fn compose(input: &TaskInput, role_spec: &str, template: Option<&str>, limit: usize) -> String {
    compose_within(input, role_spec, template, limit).text
}

/// A prompt, and what was left out of it to keep it within its budget.
#[derive(Debug, Clone, PartialEq)]
pub struct Composed {
    /// The prompt.
    pub text: String,
    /// The budget it was built within, in bytes.
    pub limit: usize,
    /// Documents shown as a summary (their headings and first lines) instead of whole, with
    /// their sizes in bytes, largest first.
    pub summarised: Vec<(String, usize)>,
    /// Summaries that were cut as well, because even the summaries did not fit.
    pub cut: Vec<String>,
}

impl Composed {
    /// One line for the transcript: the prompt's size, its budget and what was left out.
    pub fn report(&self) -> String {
        let mut line = format!(
            "{} characters (~{} tokens estimated at {CHARS_PER_TOKEN} characters a token), budget \
             {} bytes",
            self.text.chars().count(),
            estimate_tokens(&self.text),
            self.limit
        );
        if self.text.len() > self.limit {
            line.push_str(" (over it: the parts that are never cut do not fit)");
        }
        if self.summarised.is_empty() {
            line.push_str("; nothing left out");
        } else {
            let list: Vec<String> = self
                .summarised
                .iter()
                .map(|(p, n)| format!("{p} ({n} bytes)"))
                .collect();
            line.push_str(&format!(
                "; summarised to fit (headings and first lines only): {}",
                list.join(", ")
            ));
        }
        if !self.cut.is_empty() {
            line.push_str(&format!("; summaries cut too: {}", self.cut.join(", ")));
        }
        line
    }
}

/// How many characters a token is taken to be when a prompt's size is estimated. English
/// prose runs near 4 characters a token with the usual tokenizers, code and JSON nearer 3;
/// the lower figure keeps the estimate from falling short of what a server counts.
pub const CHARS_PER_TOKEN: usize = 3;

/// The estimated number of tokens of `text`.
pub fn estimate_tokens(text: &str) -> usize {
    text.chars().count().div_ceil(CHARS_PER_TOKEN)
}

/// [`compose`], saying what was left out.
pub fn compose_within(
    input: &TaskInput,
    role_spec: &str,
    template: Option<&str>,
    limit: usize,
) -> Composed {
    compose_with(input, role_spec, template, limit, None)
}

/// How the agent of a code task may run commands in its checkout, as its prompt says.
#[derive(Debug, Clone, Copy)]
pub enum Commands<'a> {
    /// Its CLI's shell, inside the kernel's sandbox.
    Shell(&'a Shell),
    /// No shell; its CLI runs the project's test command after the edits and hands the
    /// failures back (Aider's `--test-cmd`).
    TestsAfterEdits(&'a Shell),
}

/// [`compose_within`], telling the agent of a code task how it may run commands (`None`: it
/// cannot, and the prompt says nothing of commands).
pub fn compose_with(
    input: &TaskInput,
    role_spec: &str,
    template: Option<&str>,
    limit: usize,
    commands: Option<Commands<'_>>,
) -> Composed {
    let code = input.task.role.writes_code();
    let folder_dir = format!(".tlv4/sessions/{}/", input.session.id.as_str());
    let mut head = head(input, role_spec, template, code, &folder_dir);
    if let Some(commands) = commands.filter(|_| code) {
        head.push_str(&commands_section(commands));
    }
    let selection = select(input);
    let listing = listing(&selection, &folder_dir);
    let upstream = upstream(&selection);
    let contract = contract(code);

    // What is left is for the documents: when they do not fit, the largest are replaced by
    // a summary (headings and first lines, with the path of the whole file) until the rest
    // fits; if even the summaries do not fit, they are cut like any text.
    let shown: Vec<&(Section, String)> = selection.shown.iter().collect();
    let overhead: usize = shown.iter().map(|(_, p)| 3 * p.len() + 480).sum::<usize>() + 1600;
    let fixed = head.len() + listing.len() + upstream.len() + contract.len() + overhead;
    let budget = limit.saturating_sub(fixed);
    let fitted = fit(input, shown, budget, &folder_dir);

    let mut context = context_notes(&fitted, limit, &folder_dir);
    let cut: Vec<String> = fitted
        .shown
        .iter()
        .zip(&fitted.sizes)
        .zip(&fitted.caps)
        .filter(|((_, s), c)| c < s)
        .map(|(((_, p), _), _)| p.clone())
        .collect();
    context.push_str(&upstream);
    context_files(&mut context, &fitted, &folder_dir);
    context.push_str(&listing);

    let mut prompt = head;
    prompt.push_str(&context);
    prompt.push_str(&contract);
    Composed {
        text: prompt,
        limit,
        summarised: fitted.summarised,
        cut,
    }
}

/// The documents of a prompt once fitted to its budget.
struct Fitted<'a> {
    /// The files shown, in prompt order.
    shown: Vec<&'a (Section, String)>,
    /// Each file's text, or its summary.
    texts: Vec<Cow<'a, str>>,
    /// The files replaced by a summary, with their whole sizes, largest first.
    summarised: Vec<(String, usize)>,
    /// The length of each text.
    sizes: Vec<usize>,
    /// How much of each text fits.
    caps: Vec<usize>,
}

/// The parts of a prompt that are never cut (each capped on its own): the role, the task,
/// the request, the description and the template.
fn head(
    input: &TaskInput,
    role_spec: &str,
    template: Option<&str>,
    code: bool,
    folder_dir: &str,
) -> String {
    let task = &input.task;
    let sid = input.session.id.as_str();
    let mut head = String::new();
    head.push_str(&format!("# Your role: {}\n\n", task.role));
    head.push_str(&cap(
        strip_comment(role_spec).trim_end(),
        ROLE_CAP,
        "role instructions",
    ));
    head.push_str("\n\n");
    head.push_str(&format!("# The task: {}\n\n", task.id));
    head.push_str(&format!("- Task: {}\n- Role: {}\n", task.id, task.role));
    head.push_str(&format!("- Phase: {}\n- Session: {sid}\n", task.phase));
    if code {
        head.push_str(
            "- Output: code (change files in your working directory; git-tlv4 commits them)\n",
        );
    } else {
        head.push_str(
            "- Output: documents (return them in `files` of the result; write no files)\n",
        );
    }
    if let Some(expected) = line_value(&task.description, "EXPECTED") {
        head.push_str(&format!("- Expected: {expected}\n"));
    }
    head.push_str(&format!(
        "- Pipeline folder: `{folder_dir}` in your working directory (read it; only git-tlv4 \
         writes there)\n"
    ));
    if !task.blocked_by.is_empty() {
        let ids: Vec<&str> = task.blocked_by.iter().map(|t| t.as_str()).collect();
        head.push_str(&format!("- Builds on: {}\n", ids.join(", ")));
    }
    // The request is the user's text, not part of this prompt's outline: fenced, so that a
    // heading, fence or rule in it stays inside the section.
    head.push_str("\n## The request\n\n");
    head.push_str(
        fenced(
            &cap(input.session.task.trim(), REQUEST_CAP, "request"),
            "text",
        )
        .trim_end(),
    );
    head.push_str("\n\n## The description\n\n");
    head.push_str(&cap(
        task.description.trim_end(),
        DESCRIPTION_CAP,
        "description",
    ));
    head.push_str("\n\n");
    if let Some(t) = template {
        head.push_str(
            "# Template\n\nWrite the document from this template: keep every heading it \
             writes out, fill every section, use its id scheme. Its comments explain the rules \
             and are not part of the document.\n\n",
        );
        head.push_str(&fenced(
            &cap(t.trim_end(), TEMPLATE_CAP, "template"),
            "markdown",
        ));
        head.push('\n');
    }
    head
}

/// `# Running commands`: what the agent of a code task may run, the project's test command
/// and whether its checkout's environment is prepared.
fn commands_section(commands: Commands<'_>) -> String {
    let mut s = String::from("# Running commands\n\n");
    let shell = match commands {
        Commands::Shell(shell) => {
            s.push_str(
                "You have a shell in your working directory: build the code, run the tests, \
                 look at what they print, and fix what fails before you finish. The kernel's \
                 sandbox holds every command: it may write only in this checkout and in your \
                 temporary directory (`$TMPDIR`), reach the network only on the ports your \
                 configuration names, and nothing it starts outlives your run. What the \
                 sandbox refuses fails with \"Permission denied\" or \"Operation not \
                 permitted\": do not try to get around it; if it kept you from checking your \
                 change, say so in a finding.\n\n",
            );
            shell
        }
        Commands::TestsAfterEdits(shell) => {
            s.push_str(
                "You have no shell, but the project's test command runs after your edits and \
                 its failures come back to you: fix them before you finish.\n\n",
            );
            shell
        }
    };
    match &shell.tests {
        Some(t) => s.push_str(&format!(
            "- Test command: `{}` (from {}). Run it from the root of your working directory \
             before you finish: the tester runs the same command on your change.\n",
            t.command, t.from
        )),
        None => s.push_str(
            "- Test command: git-tlv4 found none for this project. If it has tests, run the \
             ones that cover your change.\n",
        ),
    }
    if shell.prepared {
        s.push_str(
            "- Environment: prepared. The project's setup ran in this checkout (its own \
             virtualenv, `node_modules`, …), and your commands find what it installed first; \
             install nothing yourself.\n",
        );
    } else {
        s.push_str(
            "- Environment: not prepared. The project's setup did not run in this checkout; \
             if a command fails for a missing dependency, say so in a finding rather than \
             installing it.\n",
        );
    }
    s.push('\n');
    s
}

/// `## Other files in the pipeline folder`: the files only listed, with their sizes.
fn listing(selection: &Selection, folder_dir: &str) -> String {
    let mut listing = String::new();
    if !selection.listed.is_empty() {
        listing.push_str(&format!(
            "## Other files in the pipeline folder\n\nNot shown here; read them under \
             `{folder_dir}` if you need them.\n\n"
        ));
        for (path, size) in selection.listed.iter().take(MAX_LISTED) {
            listing.push_str(&format!("- {path} ({size} bytes)\n"));
        }
        if selection.listed.len() > MAX_LISTED {
            listing.push_str(&format!(
                "- … and {} more\n",
                selection.listed.len() - MAX_LISTED
            ));
        }
        listing.push('\n');
    }
    listing
}

/// `## Upstream tasks`: what each task this one builds on produced.
fn upstream(selection: &Selection) -> String {
    let mut upstream = String::from("## Upstream tasks\n\n");
    if selection.upstream.is_empty() {
        upstream.push_str("None: this task starts from the request alone.\n\n");
    } else {
        for u in &selection.upstream {
            upstream.push_str(&format!("- {u}\n"));
        }
        upstream.push('\n');
    }
    upstream
}

/// Fits the shown files to `budget`: the largest are summarised until the rest fits, then
/// what still does not fit is shared out by [`water_fill`].
fn fit<'a>(
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
fn context_notes(fitted: &Fitted, limit: usize, folder_dir: &str) -> String {
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
fn context_files(context: &mut String, fitted: &Fitted, folder_dir: &str) {
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
const SUMMARY_FIRST_LINES: usize = 6;
const SUMMARY_HEADINGS: usize = 40;
/// The most a summary may be, in bytes.
const SUMMARY_CAP: usize = 2 * 1024;

/// What stands for a document left out of a prompt: its size, where the whole file is, its
/// first lines and its markdown headings (lines under 200 bytes; at most [`SUMMARY_CAP`]).
fn summary(text: &str, size: usize, path: &str) -> String {
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

/// `prompt` again, with what was wrong with the previous answer and how that answer ended,
/// for a bounded retry.
pub fn retry_prompt(prompt: &str, problem: &str, previous: &str) -> String {
    retry_prompt_within(prompt, problem, previous, RETRY_RESERVE)
}

/// [`retry_prompt`], adding at most about `reserve` bytes to `prompt`: the problem gets up to
/// 2 KiB (a third of the reserve when that is less), the previous answer's ending the rest,
/// up to 16 KiB.
pub fn retry_prompt_within(prompt: &str, problem: &str, previous: &str, reserve: usize) -> String {
    const WORDS: usize = 512;
    let problem = cap(problem, (2 * 1024).min(reserve / 3), "problem");
    let tail = (16 * 1024).min(reserve.saturating_sub(problem.len() + WORDS));
    let start = previous.len().saturating_sub(tail);
    let mut start_at = start;
    while !previous.is_char_boundary(start_at) {
        start_at += 1;
    }
    let ending = if tail == 0 { "" } else { &previous[start_at..] };
    format!(
        "{prompt}\n{RETRY_HEADING}\n\n{problem}\n\nWhatever you already changed or wrote is \
         still there: do not start over. Answer again, ending with the result block described \
         under \"Result\", with this problem fixed.\n\nYour previous answer ended like this:\n\n{}",
        fenced(ending.trim_end(), "text")
    )
}

/// The result contract.
fn contract(code: bool) -> String {
    let mut s = String::from(
        "# Result\n\n\
         When you are done, end your answer with one fenced code block tagged `json`, and write \
         nothing after it. git-tlv4 reads only that block (the rest of your answer is kept as \
         the transcript). The block holds one JSON object of this shape:\n\n\
         \x20   {\n\
         \x20     \"summary\": \"<one line: what you did>\",\n\
         \x20     \"state_update\": {\n\
         \x20       \"key_findings\": [\"<at most 5 entries, each under 100 characters>\"],\n\
         \x20       \"decisions\": [\"<a decision, and the reason for it>\"],\n\
         \x20       \"files_modified\": [\"<relative paths of the files you wrote or changed>\"],\n\
         \x20       \"verification\": \"<self-validated | peer-reviewed | tested>\",\n\
         \x20       \"tech_profile\": {\"signals\": [\"<signal>\", …], \"evidence\": {\"<signal>\": [\"<path>\", …]}, \"confidence\": \"<high | medium | low>\"}\n\
         \x20     },\n\
         \x20     \"files\": {\"<path relative to the pipeline folder>\": \"<the whole content of the file>\", …},\n\
         \x20     \"error\": \"<only when you could not do the task: why>\"\n\
         \x20   }\n\n\
         Rules:\n\
         - `summary` and `state_update` are required; `tech_profile`, `files` and `error` are \
         optional. Leave out what you do not use, and add no other keys.\n\
         - Write decisions with their reason, and findings as short facts.\n",
    );
    if code {
        s.push_str(
            "- This is a code task: make your changes directly in the files of your working \
             directory; git-tlv4 takes them from there and commits them. Do not commit, do not \
             touch `.git`, and change nothing under `.tlv4/`.\n\
             - Leave `files` out. List every file you changed or created, relative to the \
             working directory, in `files_modified`.\n\
             - Say in `verification` how you checked the change (`tested` only if you ran the \
             tests).\n",
        );
    } else {
        s.push_str(
            "- This is a document task: put every document you produce in `files`, keyed by its \
             path relative to the pipeline folder (for example `spec/product-brief.md`), with \
             its complete text. This is the only way documents are kept; files you write \
             yourself are discarded.\n\
             - Paths must stay inside the pipeline folder; `session.toml`, `control.toml`, \
             `roles.lock`, `tasks/` and `runs/` belong to git-tlv4.\n",
        );
    }
    s.push_str(
        "- If the block is missing or does not follow these rules, you will be told what is \
         wrong and asked again, at most twice.\n",
    );
    s
}

/// Which part of the context a file goes in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Section {
    Documents,
    Wisdom,
    Explorations,
}

/// The files of the context, in order, and the rest.
struct Selection {
    /// `ID: what it produced` for each upstream task.
    upstream: Vec<String>,
    /// Files shown in full (or cut), in prompt order.
    shown: Vec<(Section, String)>,
    /// Files only listed, with their sizes.
    listed: Vec<(String, usize)>,
}

/// Directories of the pipeline folder each role builds on, in reading order.
fn role_dirs(role: &Role) -> &'static [&'static str] {
    match role {
        Role::Analyst => &[],
        Role::Writer | Role::Planner => &["spec/"],
        Role::Executor => &["plan/"],
        Role::Tester => &["plan/", "artifacts/"],
        Role::Reviewer => &["spec/", "plan/", "artifacts/"],
        Role::Supervisor => &["spec/", "plan/", "artifacts/", "discussions/"],
        _ => &["plan/", "artifacts/"],
    }
}

/// Reading order of the spec documents: by phase, index files first.
fn spec_rank(path: &str) -> (usize, bool, &str) {
    const PHASES: [&str; 8] = [
        "spec/discovery-context.json",
        "spec/spec-config.json",
        "spec/product-brief.md",
        "spec/requirements/",
        "spec/architecture/",
        "spec/epics/",
        "spec/readiness-report.md",
        "spec/spec-summary.md",
    ];
    let phase = PHASES
        .iter()
        .position(|p| path.starts_with(p))
        .unwrap_or(PHASES.len());
    let not_index = !path.ends_with("/_index.md") && path != "plan/plan.json";
    (phase, not_index, path)
}

fn select(input: &TaskInput) -> Selection {
    let folder = &input.folder;
    let task = &input.task;
    let hidden = |p: &str| p.starts_with("tasks/") || p.starts_with("runs/");
    let private = ["session.toml", "control.toml", "roles.lock", "config.lock"];
    let mut shown: Vec<(Section, String)> = Vec::new();
    let mut seen: BTreeSet<String> = BTreeSet::new();
    let mut add = |sec: Section, p: &str, shown: &mut Vec<(Section, String)>| {
        if folder.contains_key(p) && seen.insert(p.to_owned()) && shown.len() < MAX_DOCUMENTS {
            shown.push((sec, p.to_owned()));
        }
    };
    let under = |dir: &str| {
        let mut v: Vec<&String> = folder
            .keys()
            .filter(|k| k.starts_with(dir) && !k.starts_with("wisdom/"))
            .collect();
        v.sort_by(|a, b| spec_rank(a).cmp(&spec_rank(b)));
        v
    };

    // Upstream: what the description says the upstream tasks produced, else their ids.
    let upstream: Vec<String> = match task
        .description
        .lines()
        .find_map(|l| l.trim().strip_prefix("- Upstream artifacts:"))
    {
        Some(list) => list
            .split("; ")
            .map(|s| s.trim().to_owned())
            .filter(|s| !s.is_empty())
            .collect(),
        None => task.blocked_by.iter().map(|t| t.to_string()).collect(),
    };

    // 1. The discovery context every later role starts from.
    add(
        Section::Documents,
        "spec/discovery-context.json",
        &mut shown,
    );
    // 2. Files and folders the description names (the upstream artifacts, the plan tasks).
    let mut named_plan_task = false;
    for token in task
        .description
        .split(|c: char| c.is_whitespace() || ",;()`'\"".contains(c))
        .map(|t| t.trim_end_matches(['.', ':']))
        .filter(|t| !t.is_empty())
    {
        if folder.contains_key(token) {
            add(Section::Documents, token, &mut shown);
        } else if token.ends_with('/') && token.contains('/') {
            for p in under(token) {
                add(Section::Documents, p, &mut shown);
            }
        } else if token.starts_with("TASK-") {
            let p = format!("plan/.task/{token}.json");
            if folder.contains_key(&p) {
                add(Section::Documents, "plan/plan.json", &mut shown);
                add(Section::Documents, &p, &mut shown);
                named_plan_task = true;
            }
        }
    }
    // 3. The documents of earlier phases the role builds on.
    for dir in role_dirs(&task.role) {
        for p in under(dir) {
            if named_plan_task && p.starts_with("plan/.task/") {
                continue;
            }
            add(Section::Documents, p, &mut shown);
        }
    }
    // 4. Wisdom, then the exploration cache.
    for p in under_all(folder, "wisdom/") {
        if p.ends_with(".md") && has_content(&folder[p]) {
            add(Section::Wisdom, p, &mut shown);
        }
    }
    let index = "explorations/cache-index.json";
    if folder
        .get(index)
        .is_some_and(|b| !String::from_utf8_lossy(b).contains("\"entries\": []"))
    {
        add(Section::Explorations, index, &mut shown);
    }
    if matches!(task.role, Role::Analyst | Role::Planner) {
        for p in under_all(folder, "explorations/") {
            add(Section::Explorations, p, &mut shown);
        }
    }
    // Sections in order: documents, wisdom, explorations (adds above already follow it,
    // but keep it true whatever the order of the loops).
    shown.sort_by_key(|(s, _)| *s as u8);

    let shown_set: BTreeSet<&str> = shown.iter().map(|(_, p)| p.as_str()).collect();
    let listed = folder
        .iter()
        .filter(|(k, _)| !shown_set.contains(k.as_str()))
        .filter(|(k, _)| !hidden(k) && !private.contains(&k.as_str()))
        .filter(|(k, _)| !k.starts_with("wisdom/") || has_content(&folder[*k]))
        .map(|(k, v)| (k.clone(), v.len()))
        .collect();
    Selection {
        upstream,
        shown,
        listed,
    }
}

fn under_all<'a>(folder: &'a BTreeMap<String, Vec<u8>>, dir: &str) -> Vec<&'a String> {
    folder.keys().filter(|k| k.starts_with(dir)).collect()
}

/// Whether a markdown file holds more than headings.
fn has_content(bytes: &[u8]) -> bool {
    String::from_utf8_lossy(bytes)
        .lines()
        .any(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
}

/// How many bytes of each item fit in `budget`: everything if all fit, else the smallest
/// items whole and every larger one cut to the same size.
fn water_fill(sizes: &[usize], budget: usize) -> Vec<usize> {
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

/// The value of the first `NAME: value` line.
fn line_value<'a>(text: &'a str, name: &str) -> Option<&'a str> {
    text.lines()
        .find_map(|l| l.trim().strip_prefix(name)?.strip_prefix(':'))
        .map(str::trim)
        .filter(|v| !v.is_empty())
}

/// `text` without a leading `<!-- … -->` comment (notes for maintainers of the file).
fn strip_comment(text: &str) -> &str {
    let t = text.trim_start();
    match t
        .strip_prefix("<!--")
        .and_then(|r| r.find("-->").map(|i| &r[i + 3..]))
    {
        Some(rest) => rest.trim_start(),
        None => text,
    }
}

/// `text` cut to `limit` bytes, saying so.
fn cap<'a>(text: &'a str, limit: usize, what: &str) -> Cow<'a, str> {
    if text.len() <= limit {
        return Cow::Borrowed(text);
    }
    let end = floor_char_boundary(text, limit);
    Cow::Owned(format!(
        "{}\n[… the {what} was cut here by git-tlv4: {end} of {} bytes shown]",
        &text[..end],
        text.len()
    ))
}

/// `text` in a fence longer than any run of backticks inside it.
fn fenced(text: &str, lang: &str) -> String {
    let mut longest = 0;
    let mut run = 0;
    for c in text.chars() {
        if c == '`' {
            run += 1;
            longest = longest.max(run);
        } else {
            run = 0;
        }
    }
    let fence = "`".repeat((longest + 1).max(4));
    format!("{fence}{lang}\n{text}\n{fence}\n")
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::agents::{CodeTree, TaskInput};
    use tlv4_core::model::{Session, Task};

    /// An empty code tree (prompts never read code).
    pub(crate) fn empty_code() -> (tempfile::TempDir, CodeTree) {
        let dir = tempfile::tempdir().expect("temp dir");
        let repo = gix::init(dir.path()).expect("init");
        let tree = repo.empty_tree().id;
        let code = CodeTree::from_tree(&repo, tree).expect("an empty tree");
        (dir, code)
    }

    /// A task input for `role`/`id` with `description` and pipeline-folder `files`.
    pub(crate) fn input(
        id: &str,
        role: &str,
        description: &str,
        files: &[(&str, &str)],
        code: CodeTree,
    ) -> TaskInput {
        let session: Session = toml::from_str(
            r#"
schema = 1
id = "TLV4-demo-20260101"
task = "Add OAuth login to the web app"
pipeline = "full-lifecycle"
supervision = true
status = "active"
base = "0000000000000000000000000000000000000000"
created_at = "2026-01-01T00:00:00Z"
updated_at = "2026-01-01T00:00:00Z"
events = 3
"#,
        )
        .expect("a valid session");
        let mut task: Task = toml::from_str(&format!(
            "id = \"{id}\"\nrole = \"{role}\"\nstatus = \"in_progress\"\nphase = \"requirements\"\n\
             priority = \"P0\"\ninner_loop = false\nattempts = 1\ndescription = \"\"\n"
        ))
        .expect("a valid task");
        task.description = description.to_owned();
        TaskInput {
            session,
            task,
            folder: files
                .iter()
                .map(|(p, c)| ((*p).to_owned(), c.as_bytes().to_vec()))
                .collect(),
            code,
        }
    }

    const DESCRIPTION: &str = "PURPOSE: Turn the goals into requirements | Success: every goal covered\n\
        TASK:\n  - Write REQ-NNN\nCONTEXT:\n  - Session: TLV4-demo-20260101\n  - Upstream artifacts: \
        DRAFT-001: spec/product-brief.md\nEXPECTED: spec/requirements/\nCONSTRAINTS: Documents only\n";

    #[test]
    fn prompt_has_role_task_context_and_contract_in_order() {
        let (_d, code) = empty_code();
        let input = input(
            "DRAFT-002",
            "writer",
            DESCRIPTION,
            &[
                ("spec/product-brief.md", "# Product Brief\n\nGOAL-MARKER\n"),
                ("spec/discovery-context.json", "{\"DISCOVERY\": 1}"),
                ("wisdom/learnings.md", "# Learnings\n\n- WISDOM-MARKER\n"),
                ("wisdom/issues.md", "# Issues\n"),
                ("artifacts/other.md", "x"),
                ("session.toml", "x"),
            ],
            code,
        );
        let specs = RoleSpecs::builtin();
        let prompt = build_prompt(&input, &specs.role("writer"));
        let at = |needle: &str| {
            prompt
                .find(needle)
                .unwrap_or_else(|| panic!("`{needle}` missing from:\n{prompt}"))
        };
        let role = at("You are the writer.");
        assert!(
            !prompt.contains("<!--"),
            "the maintainers' comment is left out"
        );
        let desc = at("PURPOSE: Turn the goals into requirements");
        let discovery = at("\"DISCOVERY\"");
        let brief = at("GOAL-MARKER");
        let wisdom = at("WISDOM-MARKER");
        let contract = at("# Result");
        assert!(
            role < desc && desc < discovery && discovery < brief,
            "{prompt}"
        );
        assert!(brief < wisdom && wisdom < contract, "{prompt}");
        assert!(prompt.contains("- Output: documents"));
        assert!(prompt.contains("- Expected: spec/requirements/"));
        assert!(prompt.contains("- DRAFT-001: spec/product-brief.md"));
        assert!(
            prompt.contains("- artifacts/other.md (1 bytes)"),
            "{prompt}"
        );
        assert!(
            !prompt.contains("wisdom/issues.md"),
            "an empty wisdom file is left out"
        );
        assert!(!prompt.contains("session.toml ("));
        assert!(prompt.contains("\"key_findings\""));
        assert!(prompt.trim_end().ends_with("at most twice."));
        assert!(!prompt.contains("cut here"));
        // The shape shown is not itself a block the result parser would take.
        assert!(
            crate::agents::result::parse(&prompt, crate::agents::result::Deliverable::Documents)
                .is_err()
        );
    }

    #[test]
    fn code_tasks_get_the_plan_and_the_code_contract() {
        let (_d, code) = empty_code();
        let input = input(
            "IMPL-001",
            "executor",
            "PURPOSE: Implement one task of plan PLAN-001\nTASK:\n  - TASK-002: add login (files: src/a.rs)\n",
            &[
                ("plan/plan.json", "{\"tasks\": []}"),
                ("plan/.task/TASK-001.json", "{\"id\": \"TASK-001\"}"),
                ("plan/.task/TASK-002.json", "{\"id\": \"TASK-002\"}"),
            ],
            code,
        );
        let prompt = build_prompt(&input, "Executor instructions.");
        assert!(prompt.contains("- Output: code"));
        assert!(prompt.contains("### plan/.task/TASK-002.json"));
        assert!(!prompt.contains("### plan/.task/TASK-001.json"), "{prompt}");
        assert!(prompt.contains("- plan/.task/TASK-001.json ("));
        assert!(prompt.contains("Leave `files` out"));
        assert!(prompt.find("### plan/plan.json") < prompt.find("### plan/.task/TASK-002.json"));
    }

    #[test]
    fn documents_past_the_budget_are_summarised_largest_first() {
        let (_d, code) = empty_code();
        let mut huge = String::from("# Requirements\n\nThe first line of the requirements.\n");
        for i in 0..400 {
            huge.push_str(&format!("\n## REQ-{i:03}: a goal\n\n"));
            huge.push_str(&"requirement text line\n".repeat(120));
        }
        let big = "architecture line\n".repeat(8_000);
        let input = input(
            "DRAFT-004",
            "writer",
            DESCRIPTION,
            &[
                ("spec/discovery-context.json", "{\"small\": true}"),
                ("spec/requirements/_index.md", &huge),
                ("spec/architecture/_index.md", &big),
                ("wisdom/decisions.md", "# Decisions\n\n- keep it small\n"),
            ],
            code,
        );
        // Only the largest needs to go: the other stays whole.
        let limit = 200 * 1024;
        let c = compose_within(&input, "Writer.", None, limit);
        assert!(c.text.len() <= limit, "{} > {limit}", c.text.len());
        assert_eq!(
            c.summarised,
            vec![("spec/requirements/_index.md".to_owned(), huge.len())]
        );
        assert!(c.cut.is_empty());
        assert_eq!(c.text.matches("architecture line").count(), 8_000);
        assert!(c.text.contains("these files are shown as a summary only"));
        assert!(
            c.text.contains(&format!(
                "- spec/requirements/_index.md ({} bytes)",
                huge.len()
            )),
            "the note names the file and its size"
        );
        assert!(c.text.contains(
            "the whole file is `.tlv4/sessions/TLV4-demo-20260101/spec/requirements/_index.md`"
        ));
        // The summary: the first lines, then the headings.
        assert!(c.text.contains("The first line of the requirements."));
        assert!(
            c.text
                .contains("Headings:\n## REQ-001: a goal\n## REQ-002: a goal")
        );
        assert!(c.text.matches("requirement text line").count() <= 6);
        assert!(c.report().contains(&format!(
            "summarised to fit (headings and first lines only): spec/requirements/_index.md ({} bytes)",
            huge.len()
        )));
        assert!(c.text.contains("{\"small\": true}") && c.text.contains("- keep it small"));
        assert!(c.text.trim_end().ends_with("at most twice."));

        // A smaller budget: the next largest goes too; the small ones stay whole.
        let limit = 64 * 1024;
        let c = compose_within(&input, "Writer.", None, limit);
        assert!(c.text.len() <= limit, "{} > {limit}", c.text.len());
        let names: Vec<&str> = c.summarised.iter().map(|(p, _)| p.as_str()).collect();
        assert_eq!(
            names,
            ["spec/requirements/_index.md", "spec/architecture/_index.md"]
        );
        assert!(c.text.contains("{\"small\": true}") && c.text.contains("- keep it small"));
        assert!(!c.text.contains("cut here"));

        // Everything fits: nothing left out.
        let c = compose_within(&input, "Writer.", None, 4 << 20);
        assert!(c.summarised.is_empty());
        assert!(c.report().contains("nothing left out"));
        // The default bound holds too.
        let prompt = build_prompt(&input, "Writer.");
        assert!(prompt.len() <= PROMPT_LIMIT);
    }

    #[test]
    fn summaries_that_still_do_not_fit_are_cut() {
        let (_d, code) = empty_code();
        let heads: String = (0..40)
            .map(|i| format!("# Heading {i} {}\n", "x".repeat(60)))
            .collect();
        let files: Vec<(String, String)> = (0..30)
            .map(|i| {
                (
                    format!("spec/epics/E-{i:02}.md"),
                    format!("{heads}{}", "body\n".repeat(2000)),
                )
            })
            .collect();
        let refs: Vec<(&str, &str)> = files
            .iter()
            .map(|(p, c)| (p.as_str(), c.as_str()))
            .collect();
        let input = input("DRAFT-005", "writer", DESCRIPTION, &refs, code);
        let limit = 24 * 1024;
        let c = compose_within(&input, "Writer.", None, limit);
        assert!(c.text.len() <= limit, "{} > {limit}", c.text.len());
        assert_eq!(c.summarised.len(), 30);
        assert!(!c.cut.is_empty());
        assert!(c.text.contains("even so, the largest were cut"));
        assert!(c.report().contains("summaries cut too: spec/epics/"));
    }

    #[test]
    fn water_fill_keeps_small_items_whole() {
        assert_eq!(water_fill(&[10, 20], 100), vec![10, 20]);
        assert_eq!(water_fill(&[10, 1000, 500], 310), vec![10, 150, 150]);
        assert_eq!(water_fill(&[10, 1000], 5), vec![2, 2]);
    }

    #[test]
    fn templates_go_to_writers() {
        let (_d, code) = empty_code();
        let input = input("DRAFT-002", "writer", DESCRIPTION, &[], code);
        let specs = RoleSpecs::builtin();
        let template = specs.template("requirements").expect("a builtin template");
        let prompt = compose(&input, &specs.role("writer"), Some(template), PROMPT_LIMIT);
        assert!(prompt.find("# Template") < prompt.find("# Context"));
        assert!(prompt.contains("REQ-NNN"));
    }

    #[test]
    fn retry_prompt_carries_the_problem_and_the_old_ending() {
        let p = retry_prompt("PROMPT", "the block is not JSON", "blah\n```json\n{x}\n```");
        assert!(p.starts_with("PROMPT\n"));
        assert!(p.contains(RETRY_HEADING));
        assert!(p.contains("the block is not JSON"));
        assert!(p.contains("{x}"));
    }

    #[test]
    fn roles_lock_is_stable_and_uses_git_blob_ids() {
        let specs = RoleSpecs::builtin();
        let lock = roles_lock(&specs, gix::hash::Kind::Sha1);
        assert_eq!(
            lock,
            roles_lock(&RoleSpecs::builtin(), gix::hash::Kind::Sha1)
        );
        for role in Role::KNOWN {
            assert!(
                lock.contains(&format!(" roles/{role}.md builtin\n")),
                "{lock}"
            );
        }
        assert!(lock.contains(" templates/requirements.md builtin\n"));
        // The id is git's own: compare with `git hash-object`.
        let out = std::process::Command::new("git")
            .args(["hash-object", "--stdin"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .and_then(|mut c| {
                use std::io::Write;
                c.stdin
                    .take()
                    .expect("stdin")
                    .write_all(specs.role("tester").as_bytes())?;
                c.wait_with_output()
            })
            .expect("git hash-object runs");
        let id = String::from_utf8(out.stdout).unwrap();
        assert!(
            lock.contains(&format!("{} roles/tester.md", id.trim())),
            "{lock}"
        );

        // A repository override changes the lock and is marked as such.
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join(ROLE_OVERRIDE_DIR)).unwrap();
        std::fs::write(
            dir.path().join(ROLE_OVERRIDE_DIR).join("tester.md"),
            "Mine.\n",
        )
        .unwrap();
        let loaded = RoleSpecs::load(dir.path()).unwrap();
        assert_eq!(loaded.role("tester"), "Mine.\n");
        assert_eq!(loaded.origin("tester"), Some(Origin::Repository));
        assert_eq!(loaded.role("writer"), specs.role("writer"));
        let other = roles_lock(&loaded, gix::hash::Kind::Sha1);
        assert_ne!(other, lock);
        assert!(other.contains(" roles/tester.md repository\n"));
        assert_eq!(RoleSpecs::load(Path::new("/nonexistent")).unwrap(), specs);
    }

    #[test]
    fn every_role_has_builtin_instructions() {
        let specs = RoleSpecs::builtin();
        for role in Role::KNOWN {
            assert_eq!(specs.origin(role.as_str()), Some(Origin::Builtin));
            assert!(specs.role(role.as_str()).len() > 500, "{role} is too short");
        }
        assert!(
            specs
                .role("security-expert")
                .contains("`security-expert` specialist")
        );
    }
}
