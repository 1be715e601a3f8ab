//! Reading a streamed answer: the server-sent events of a chat completion, counted on the
//! task's meter as they come, and closed once the result block is complete or the output
//! bound is passed.

use std::io::{BufRead, BufReader, Read};

use serde_json::Value;

use super::OpenAiDriver;
use super::http::{Exchange, Question, server_message};
use crate::command::Usage;
use crate::meter::Meter;
use crate::result;

/// How many streamed chunks past the output bound are read before the stream is closed (a
/// server that ignores `max_tokens`; one that honours it stops at the bound by itself).
pub(super) const BOUND_SLACK: u64 = 16;

impl OpenAiDriver {
    /// The exchange of a streamed answer: the answer, or why the stream did not give one.
    pub(super) fn streamed(
        &self,
        q: &Question<'_>,
        st: Streamed,
        text: String,
        seconds: f64,
    ) -> Exchange {
        let mut usage = st.usage;
        usage.seconds = seconds;
        let cut = (st.ended == Ended::Bound || st.finish.as_deref() == Some("length"))
            .then(|| cut_problem(&st.answer, q.bound));
        let stopped = (st.ended == Ended::OverBound)
            .then(|| q.meter.over_bound())
            .flatten()
            .map(|over| crate::meter::over_bound_error(&self.agent, over));
        let reply = match st.ended {
            Ended::OverBound => Err(format!(
                "the stream from {} was closed at the task's bound after {} chunks",
                self.endpoint, st.chunks
            )),
            Ended::Broke(e) => Err(format!(
                "the stream from {} broke off after {} chunks: {e}",
                self.endpoint, st.chunks
            )),
            Ended::Timeout => Err(format!(
                "{} did not finish its answer within {}; the stream was closed \
                 after {} chunks",
                self.endpoint,
                self.allowed(q),
                st.chunks
            )),
            Ended::Error(e) => Err(format!("the server reported an error in the stream: {e}")),
            _ if st.answer.trim().is_empty() => Err(format!(
                "the model's answer has no text (finish_reason: {})",
                st.finish.as_deref().unwrap_or("not given")
            )),
            _ => Ok(st.answer.clone()),
        };
        Exchange {
            reply,
            body: text,
            usage,
            cut,
            stopped,
        }
    }
}

/// An answer read from a server-sent event stream.
pub(super) struct Streamed {
    /// The text of the content deltas, joined.
    pub(super) answer: String,
    /// The lines that arrived, as they arrived (at most [`RESPONSE_LIMIT`] bytes).
    pub(super) raw: String,
    /// Chunks that carried text (each about one token).
    pub(super) chunks: u64,
    /// The last `finish_reason` given.
    pub(super) finish: Option<String>,
    /// What the server reported (`usage` of the last chunk, with `include_usage`), else the
    /// chunks counted as output tokens.
    pub(super) usage: Usage,
    pub(super) ended: Ended,
}

/// How reading a stream ended.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Ended {
    /// `data: [DONE]`.
    Done,
    /// The server closed the stream without `[DONE]`.
    Eof,
    /// The result block was complete: the rest was not read.
    Complete,
    /// More chunks than the output bound arrived: the rest was not read.
    Bound,
    /// The task's token bound was crossed (see [`Meter::over_bound`]): the rest was not read.
    OverBound,
    /// An `error` object came in the stream.
    Error(String),
    /// The request's time ran out while reading.
    Timeout,
    /// The connection failed, or more than [`RESPONSE_LIMIT`] arrived.
    Broke(String),
}

impl Ended {
    pub(super) fn describe(&self) -> String {
        match self {
            Ended::Done => "ended with [DONE]".into(),
            Ended::Eof => "closed by the server without [DONE]".into(),
            Ended::Complete => "result block complete, the stream closed by git-tlv4".into(),
            Ended::Bound => "past the output bound, the stream closed by git-tlv4".into(),
            Ended::OverBound => "past the task's bound, the stream closed by git-tlv4".into(),
            Ended::Error(e) => format!("the server reported an error: {e}"),
            Ended::Timeout => "timed out".into(),
            Ended::Broke(e) => format!("broke off: {e}"),
        }
    }
}

/// Reads a chat-completions event stream: `data: {json}` lines with `choices[0].delta`, up to
/// `data: [DONE]`. Stops early, leaving the rest unread, when [`BOUND_SLACK`] more chunks
/// came after the answer's result block was complete (the contract says nothing follows it;
/// what does is not part of the answer), or when more than `bound` chunks (plus
/// [`BOUND_SLACK`]) came from a server that ignores the bound.
pub(super) fn read_stream(reader: impl Read, bound: u64, meter: &Meter) -> Streamed {
    let mut reader = BufReader::new(reader);
    let mut st = Streamed {
        answer: String::new(),
        raw: String::new(),
        chunks: 0,
        finish: None,
        usage: Usage::default(),
        ended: Ended::Eof,
    };
    let mut reported = false;
    // Chunks read after the result block was complete.
    let mut after: Option<u64> = None;
    let mut line = Vec::new();
    loop {
        line.clear();
        match reader.read_until(b'\n', &mut line) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) => {
                st.ended = match e.kind() {
                    std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock => Ended::Timeout,
                    _ => Ended::Broke(e.to_string()),
                };
                break;
            }
        }
        let text = String::from_utf8_lossy(&line);
        st.raw.push_str(&text);
        let Some(data) = text.trim_end().strip_prefix("data:") else {
            // Comments (`: ping`), `event:` and `id:` lines, blank separators.
            continue;
        };
        let data = data.trim();
        if data == "[DONE]" {
            st.ended = Ended::Done;
            break;
        }
        let Ok(chunk) = serde_json::from_str::<Value>(data) else {
            continue;
        };
        if chunk.get("error").is_some_and(|e| !e.is_null()) {
            st.ended = Ended::Error(server_message(data));
            break;
        }
        if let Some(m) = chunk["model"].as_str().filter(|m| !m.is_empty()) {
            st.usage.model = Some(m.to_owned());
        }
        if let Some(u) = chunk.get("usage").filter(|u| u.is_object()) {
            reported = true;
            st.usage.input_tokens = u["prompt_tokens"].as_u64().unwrap_or(0);
            st.usage.output_tokens = u["completion_tokens"].as_u64().unwrap_or(0);
            st.usage.cached_input_tokens = u["prompt_tokens_details"]["cached_tokens"]
                .as_u64()
                .unwrap_or(0);
        }
        let choice = &chunk["choices"][0];
        if let Some(f) = choice["finish_reason"].as_str() {
            st.finish = Some(f.to_owned());
        }
        let delta = &choice["delta"];
        let content = delta["content"].as_str().unwrap_or("");
        // Reasoning models stream their thinking apart from the answer: it counts as tokens.
        let thinking = delta["reasoning_content"]
            .as_str()
            .or(delta["reasoning"].as_str())
            .unwrap_or("");
        if content.is_empty() && thinking.is_empty() {
            continue;
        }
        st.chunks += 1;
        meter.add(1);
        if meter.over_bound().is_some() {
            st.ended = Ended::OverBound;
            break;
        }
        if let Some(n) = after.as_mut() {
            // Past the result block: a few chunks are read for the usage and `[DONE]` that a
            // server sends right after the answer's end; a model that goes on is cut off.
            *n += 1;
            if *n > BOUND_SLACK {
                st.ended = Ended::Complete;
                break;
            }
            continue;
        }
        st.answer.push_str(content);
        if content.contains('`') && result_complete(&st.answer) {
            after = Some(0);
            continue;
        }
        if st.chunks >= bound.saturating_add(BOUND_SLACK) {
            st.ended = Ended::Bound;
            break;
        }
    }
    if !reported {
        st.usage.output_tokens = st.chunks;
    }
    st
}

/// Whether `text` just closed a fenced block and its result block is a complete result
/// object (one with `summary` and `state_update`).
pub(super) fn result_complete(text: &str) -> bool {
    let last = text.trim_end().rsplit('\n').next().unwrap_or("").trim();
    if last.len() < 3 || !last.chars().all(|c| c == '`') {
        return false;
    }
    result::extract(text)
        .ok()
        .and_then(|body| serde_json::from_str::<Value>(body).ok())
        .is_some_and(|v| v.get("summary").is_some() && v.get("state_update").is_some())
}

/// The problem of an answer the output bound cut short, for the model.
pub(super) fn cut_problem(answer: &str, bound: u64) -> String {
    let started = answer.contains("```json") || answer.contains("```JSON");
    let state = if started {
        "before its result block was closed"
    } else {
        "before its result block began"
    };
    format!(
        "your answer reached the output bound of {bound} tokens {state}, so it was cut off. \
         Answer again, shorter: no preamble and no repetition, the work itself and then the \
         result block."
    )
}
