//! The `openai` driver: a model behind an OpenAI-compatible chat-completions endpoint
//! (Ollama, llama.cpp's `llama-server`, vLLM, hosted APIs), with no agent CLI in between.
//!
//! Configuration (`[agents.<name>]`): `driver = "openai"`, `url` (the API base, such as
//! `http://127.0.0.1:11434/v1`; `<url>/chat/completions` is called), `model`, and optionally
//! `timeout` (per answer, default [`process::duration::DEFAULT_TIMEOUT`]) and
//! `env.OPENAI_API_KEY`. The key is taken from the agent's `env`, else from the process
//! environment, else there is none (local servers need none); it is sent as
//! `Authorization: Bearer` only when there is one.
//! `max_output_tokens` bounds every answer (sent as `max_tokens`; the default depends on the
//! role, see [`default_output_tokens`]); `context_tokens` and `prompt_budget` bound the
//! prompt, whose largest documents are summarised to fit (see [`prompt::compose_within`]).
//!
//! Answers are streamed: the driver reads the server-sent events as they come, counts the
//! tokens on the task's meter, and stops reading once the result block is complete or the
//! output bound is passed, so a model that loops costs at most the bound. A server that
//! refuses a prompt for its length fails the task at once, with the prompt's size and the
//! server's limit.
//!
//! One run: the role's instructions are the system message, the prompt (built like the CLI
//! drivers' by [`prompt::compose`], plus a note that the model has no tools) the user
//! message. Transient failures (a refused or reset connection, HTTP 429, HTTP 5xx) are
//! retried with backoff; other HTTP errors fail the task at once with the server's message;
//! a request that takes longer than the timeout fails the task. Agent failures come back as
//! a `Failed` outcome, never as an error, with the raw response body kept in
//! [`DriverOutput::raw`].
//!
//! A chat model cannot touch files, so code tasks work differently: the prompt shows the
//! repository's files (those the task names, or all of them when the repository is small)
//! and asks for the change as one unified diff in a fenced `diff` block. The driver refuses a
//! diff that touches `.git/` or `.tlv4/` or leaves the tree, and applies the others with
//! `git apply` in the task's working directory. An answer whose result block breaks the
//! contract is sent back with the problem (at most [`CONTRACT_TRIES`] answers in all), and a
//! diff that does not apply is sent back once; nothing is applied until both are right.
//!
//! The driver's parts: [`config`] (the agent's section and the bounds), [`http`] (one question,
//! its retries and the classes of error), [`stream`] (the server-sent events), [`code`] (the
//! code a code task is shown) and [`patch`] (the diff of its answer, checked and applied).

mod code;
mod config;
mod http;
mod patch;
mod stream;
#[cfg(test)]
mod tests;

use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use super::command::{Driver, DriverOutput, RunContext, Usage};
use super::contract::{self, CONTRACT_TRIES, Turn};
use super::process::RetryPolicy;
use super::prompt::{self, RoleSpecs};
use super::result::{self, Deliverable};
use super::{Outcome, TaskInput, TaskOutput};
use tlv4_core::error::{Error, Result};
use tlv4_core::model::Role;

use code::{CODE_BUDGET, LISTING_BUDGET, code_section};
use http::Question;
use patch::{HANDOVER, Handover, PATCH_TRIES};

pub use config::{API_KEY_ENV, default_output_tokens};

/// What every prompt of this driver says about the setting.
const CHAT_NOTE: &str = "You are answering through a chat API: you cannot read or write files, \
    run commands or use tools. Everything you get is in this message; files that are only \
    listed by path are not available to you, so work from what is shown.";

/// The driver of one agent on an OpenAI-compatible endpoint.
pub struct OpenAiDriver {
    agent: String,
    endpoint: String,
    model: String,
    api_key: Option<String>,
    specs: RoleSpecs,
    timeout: Duration,
    retry: RetryPolicy,
    http: ureq::Agent,
    /// `max_output_tokens`, if configured.
    max_output: Option<u64>,
    /// `context_tokens`, if configured.
    context_tokens: Option<u64>,
    /// `prompt_budget` (estimated tokens), if configured.
    prompt_budget: Option<u64>,
    /// Whether the server wants the bound as `max_completion_tokens` (it refused
    /// `max_tokens` once).
    completion_field: AtomicBool,
    /// Whether the server refused the streaming fields once: requests ask for a plain answer.
    plain: AtomicBool,
}

impl OpenAiDriver {
    fn failed(&self, reason: &str) -> TaskOutput {
        contract::failed(&format!("agent `{}` (openai)", self.agent), reason)
    }

    /// The prompt of a task: the system message (the role's instructions) and the first user
    /// message.
    fn messages(&self, input: &TaskInput, workdir: &Path) -> Messages {
        let task = &input.task;
        let code = task.role.writes_code();
        let system = strip_comment(&self.specs.role(task.role.as_str()))
            .trim()
            .to_owned();
        let template = if task.role == Role::Writer {
            self.specs.template(&task.phase)
        } else {
            None
        };
        // The budget holds both messages and what a retry adds.
        let limit = self.prompt_limit(&task.role);
        let retry_reserve = prompt::RETRY_RESERVE.min(limit / 5);
        let avail = limit.saturating_sub(retry_reserve + system.len());
        let code_budget = CODE_BUDGET.min(avail * 2 / 5);
        let listing_budget = LISTING_BUDGET.min(avail / 10);
        let reserve = if code {
            code_budget + listing_budget + HANDOVER.len() + 1024
        } else {
            1024
        };
        let composed = prompt::compose_within(
            input,
            "",
            template,
            self.specs.contract(),
            avail.saturating_sub(reserve),
        );
        let base = &composed.text;
        // `compose` put the (here empty) role instructions under the first heading; they are
        // in the system message instead.
        let heading = format!("# Your role: {}\n\n", task.role);
        let mut user = match base.strip_prefix(&heading) {
            Some(rest) => format!(
                "{heading}Your instructions are in the system message.\n\n{CHAT_NOTE}\n\n{}",
                rest.trim_start_matches('\n')
            ),
            None => format!("{CHAT_NOTE}\n\n{base}"),
        };
        if code {
            let section = code_section(input, workdir, &user, code_budget, listing_budget);
            match user.rfind("\n# Result\n") {
                Some(at) => user.insert_str(at + 1, &section),
                None => user.push_str(&section),
            }
            user.push('\n');
            user.push_str(HANDOVER);
        }
        let size = system.len() + user.len();
        let mut report = composed.report();
        report.push_str(&format!(
            "; with the system message {} characters (~{} tokens estimated) of a budget of {limit} \
             bytes ({}), {retry_reserve} of them kept for a retry",
            system.chars().count() + user.chars().count(),
            (system.chars().count() + user.chars().count()).div_ceil(prompt::CHARS_PER_TOKEN),
            self.budget_source()
        ));
        if size + retry_reserve > limit {
            report.push_str("; OVER the budget: the parts that are never cut do not fit");
        }
        Messages {
            system,
            user,
            report,
            retry_reserve,
        }
    }
}

impl Driver for OpenAiDriver {
    fn name(&self) -> &str {
        &self.agent
    }

    fn run(&self, input: &TaskInput, ctx: &RunContext) -> Result<DriverOutput> {
        let deliverable = Deliverable::of(&input.task.role);
        let code = deliverable == Deliverable::Code;
        let Messages {
            system,
            user: base,
            report,
            retry_reserve,
        } = self.messages(input, &ctx.workdir);
        let bound = self.output_bound(&input.task.role);

        let scratch_dir = ctx.scratch()?;
        let scratch = scratch_dir.path().to_path_buf();

        let mut usage = Usage {
            model: Some(self.model.clone()),
            ..Usage::default()
        };
        let mut transcript = format!(
            "=== prompt: {report}; output bound {bound} tokens ===\n=== system message ===\n{system}\n"
        );
        let mut bad_patches = 0;
        // What the last question and its response were.
        let mut record = String::new();
        let mut raw = String::new();
        let settled = contract::negotiate(&base, retry_reserve, |answer_no, user| {
            // A run over its bound asks for no other answer.
            if let Some(over) = ctx.meter.over_bound() {
                return Err(super::meter::over_bound_error(&self.agent, over));
            }
            record = format!("[system]\n{system}\n\n[user]\n{user}");
            if ctx.run_dir.is_some() {
                let file = scratch.join("prompt.md");
                std::fs::write(&file, &record)
                    .map_err(|e| Error::io(format!("cannot write {}", file.display()), e))?;
            }
            let q = Question {
                system: &system,
                user,
                bound,
                answer_no,
                meter: &ctx.meter,
                deadline: ctx.deadline,
            };
            let ex = self.chat(&q, &mut transcript);
            usage.add(&ex.usage);
            raw = ex.body.clone();
            if let Some(e) = ex.stopped {
                transcript.push_str(&format!("=== stopped: {e} ===\n"));
                if let Some(dir) = &ctx.run_dir {
                    let _ = std::fs::write(dir.join("transcript.txt"), &transcript);
                }
                return Err(e);
            }
            let text = match &ex.reply {
                Ok(text) => text,
                Err(reason) => return Ok(Turn::Failed(reason.clone())),
            };
            let parsed = result::parse_in(text, deliverable, Some(&ctx.workdir));
            // An answer the bound cut short is sent back as that, whatever else is wrong.
            let parsed = match (parsed, &ex.cut) {
                (Err(e), Some(cut)) => Err(result::ContractError {
                    message: format!("{cut}\n\n(What git-tlv4 found: {e})"),
                }),
                (p, _) => p,
            };
            let problem = match parsed {
                Err(e) if code => format!(
                    "{e}\n\nNothing of this answer was applied: send the whole answer again, \
                     the ```diff block and the result block."
                ),
                Err(e) => e.message,
                Ok(output) if !code || output.outcome != Outcome::Completed => {
                    return Ok(Turn::Done(output));
                }
                Ok(mut output) => match self.hand_over(
                    text,
                    &mut output,
                    &ctx.workdir,
                    &scratch,
                    answer_no,
                    &mut transcript,
                ) {
                    Ok(()) => return Ok(Turn::Done(output)),
                    Err(Handover::Local(e)) => return Err(e),
                    // Sent back like any other broken contract.
                    Err(Handover::NoPatch) => "the answer carried no patch: it lists changed \
                                               files in `files_modified` but has no ```diff \
                                               block. Send the change as one ```diff block, \
                                               then the result block."
                        .to_owned(),
                    Err(Handover::Patch(p)) => {
                        bad_patches += 1;
                        if bad_patches >= PATCH_TRIES || answer_no >= CONTRACT_TRIES {
                            return Ok(Turn::Failed(format!("its change was not applied: {p}")));
                        }
                        format!(
                            "{p}\n\nThe files are unchanged, as shown above. Send the whole \
                             change again as one diff against them, then the result block."
                        )
                    }
                },
            };
            Ok(Turn::Rejected {
                problem,
                answer: text.clone(),
            })
        })?;
        let output = settled.unwrap_or_else(|reason| self.failed(&reason));
        if let Some(dir) = &ctx.run_dir {
            let _ = std::fs::write(dir.join("transcript.txt"), &transcript);
        }
        Ok(DriverOutput {
            output,
            prompt: record,
            raw,
            transcript: Some(transcript),
            usage,
        })
    }
}

/// The messages of a task's first question.
struct Messages {
    system: String,
    user: String,
    /// The prompt's size, budget and what was left out, for the transcript.
    report: String,
    /// Bytes kept free in the budget for what a retry adds.
    retry_reserve: usize,
}

/// `text` without a leading `<!-- … -->` comment.
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
