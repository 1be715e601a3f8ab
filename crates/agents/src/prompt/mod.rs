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
//!
//! The parts live apart: where the texts come from and `roles.lock` ([`specs`]), which files of
//! the pipeline folder a task sees ([`select`]), fitting them to the budget ([`fit`]), and
//! the result contract, a template of its own ([`contract`]).

mod contract;
mod fit;
mod select;
mod specs;
#[cfg(test)]
pub(crate) mod tests;

use std::borrow::Cow;

use super::TaskInput;
use super::command::Shell;
use super::process::floor_char_boundary;

use fit::{context_files, context_notes, fit};
use select::{Section, listing, select, upstream};

pub use contract::Contract;
pub use specs::{Origin, ROLE_OVERRIDE_DIR, RoleSpecs, TEMPLATE_OVERRIDE_DIR, roles_lock};

/// The upper bound of a prompt, in bytes.
pub const PROMPT_LIMIT: usize = 256 * 1024;
/// Room kept free in a first prompt for what a retry adds (the problem and the end of the
/// previous answer), so that retries stay within [`PROMPT_LIMIT`] too.
pub const RETRY_RESERVE: usize = 20 * 1024;
/// Words of the retry section that fake agents look for.
pub const RETRY_HEADING: &str = "# Your previous answer was not accepted";

/// Caps of the parts that are never cut to make room for documents.
const ROLE_CAP: usize = 64 * 1024;
const REQUEST_CAP: usize = 8 * 1024;
const DESCRIPTION_CAP: usize = 32 * 1024;
const TEMPLATE_CAP: usize = 48 * 1024;

/// The prompt for `input`, with `role_spec` as the role's instructions, within
/// [`PROMPT_LIMIT`].
#[cfg(test)]
pub fn build_prompt(input: &TaskInput, role_spec: &str) -> String {
    compose(input, role_spec, None, Contract::builtin(), PROMPT_LIMIT)
}

/// The prompt for `input` with the role's instructions, the template of the document to
/// write (if any) and the result contract, within `limit` bytes.
#[cfg(test)]
pub fn compose(
    input: &TaskInput,
    role_spec: &str,
    template: Option<&str>,
    contract: &Contract,
    limit: usize,
) -> String {
    compose_within(input, role_spec, template, contract, limit).text
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
    contract: &Contract,
    limit: usize,
) -> Composed {
    compose_with(input, role_spec, template, contract, limit, None)
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
    contract: &Contract,
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
    let contract = contract.text(code);

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
    prompt.push_str(contract);
    Composed {
        text: prompt,
        limit,
        summarised: fitted.summarised,
        cut,
    }
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

/// `prompt` again, with what was wrong with the previous answer and how that answer ended,
/// for a bounded retry.
#[cfg(test)]
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
    let fence = tlv4_core::text::fence(text, 4);
    format!("{fence}{lang}\n{text}\n{fence}\n")
}
