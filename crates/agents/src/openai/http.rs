//! One question to the server over HTTP: the request, retries of transient failures, the
//! classes of error (a timeout, a refused connection, a prompt too long, a field the server
//! does not know) and what the task is told of each, and the plain JSON answer.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::OpenAiDriver;
use super::stream::{Streamed, cut_problem, read_stream};
use crate::command::Usage;
use crate::limits::{self, Kind, SHORT_WAIT_MS};
use crate::meter::Meter;
use crate::prompt;
use tlv4_core::error::Error;
use tlv4_core::text::excerpt;

/// The largest response body read.
pub(super) const RESPONSE_LIMIT: u64 = 16 * 1024 * 1024;

impl OpenAiDriver {
    /// One question, with retries of transient failures. The answer is streamed when the
    /// server streams, read whole when it answers plain JSON.
    pub(super) fn chat(&self, q: &Question<'_>, log: &mut String) -> Exchange {
        let tries = self.retry.tries.max(1);
        let mut pause = self.retry.backoff;
        let mut seconds = 0.0;
        let mut n = 0;
        let mut switched = false;
        loop {
            n += 1;
            let last = n >= tries;
            let field = if self.completion_field.load(Ordering::Relaxed) {
                "max_completion_tokens"
            } else {
                "max_tokens"
            };
            let plain = self.plain.load(Ordering::Relaxed);
            let body = self.request_body(q, field, plain);
            let started = Instant::now();
            let sent = self.post(&body, q);
            let took = started.elapsed().as_secs_f64();
            seconds += took;
            let after = if n > 1 {
                format!(" (after {n} tries)")
            } else {
                String::new()
            };
            self.log_answer(log, q, n, field, &sent, took);
            match sent {
                Ok(Response {
                    status,
                    text,
                    stream: Some(st),
                    ..
                }) if (200..300).contains(&status) => {
                    return self.streamed(q, st, text, seconds);
                }
                Ok(Response { status, text, .. }) if (200..300).contains(&status) => {
                    return answered(q, text, seconds);
                }
                Ok(Response { status, text, .. }) if status == 400 && too_long(&text) => {
                    let reason = self.too_long_reason(q, &text);
                    return failure(reason, text, seconds);
                }
                Ok(Response { status, text, .. })
                    if status == 400
                        && !switched
                        && field == "max_tokens"
                        && server_message(&text).contains("max_completion_tokens") =>
                {
                    // OpenAI's newer models take the bound under its newer name only.
                    switched = true;
                    self.completion_field.store(true, Ordering::Relaxed);
                    n -= 1;
                    continue;
                }
                Ok(Response { status, text, .. })
                    if status == 400 && !plain && refuses_streaming(&server_message(&text)) =>
                {
                    // A server that cannot stream (or does not know `stream_options`) is asked
                    // for a plain answer, now and from then on.
                    self.plain.store(true, Ordering::Relaxed);
                    n -= 1;
                    continue;
                }
                Ok(Response {
                    status, text, wait, ..
                }) if matches!(status, 429 | 529)
                    && let Some(limit) = self.service_limit(status, &text, wait, last) =>
                {
                    let mut ex = failure(limit.detail.clone(), text.clone(), seconds);
                    ex.stopped = Some(limit.error(&self.agent));
                    return ex;
                }
                Ok(Response { status, .. }) if !last && (status == 429 || status >= 500) => {}
                Ok(Response { status, text, .. }) => {
                    return self.refused(q, status, text, &after, seconds);
                }
                Err(Sent::Timeout) => {
                    let reason = format!(
                        "{} did not answer within {}; the request was abandoned",
                        self.endpoint,
                        self.allowed(q)
                    );
                    return failure(reason, String::new(), seconds);
                }
                Err(Sent::Transient(_)) if !last => {}
                Err(Sent::Transient(e) | Sent::Other(e)) => {
                    let reason = format!("cannot reach {}{after}: {e}", self.endpoint);
                    q.meter.api_error(&reason);
                    return failure(reason, String::new(), seconds);
                }
            }
            // A server that says how long to wait is taken at its word (a wait longer than
            // [`SHORT_WAIT_MS`] was a limit, above).
            let asked = match &sent {
                Ok(r) => r
                    .wait
                    .map(|ms| Duration::from_millis(ms.min(SHORT_WAIT_MS))),
                Err(_) => None,
            };
            std::thread::sleep(asked.unwrap_or(pause));
            pause *= 2;
        }
    }

    /// Whether a refusal (HTTP 429 or 529, with `Retry-After` asking for `wait`
    /// milliseconds) is a limit the task waits for rather than one waited out here: a body
    /// that says the quota is spent (`insufficient_quota`), a wait longer than
    /// [`SHORT_WAIT_MS`], or a 429 still there at the `last` try.
    pub(super) fn service_limit(
        &self,
        status: u16,
        body: &str,
        wait: Option<u64>,
        last: bool,
    ) -> Option<limits::Limit> {
        let now = tlv4_core::clock::now_ms();
        let said = limits::recognise_at("openai", body, now);
        let until = wait.map(|ms| now.saturating_add(ms));
        let words = || {
            format!(
                "{} answered HTTP {status}: {}",
                self.endpoint,
                server_message(body)
            )
        };
        match said {
            Some(l) if l.kind == Kind::Usage => Some(limits::Limit {
                until_ms: until.or(l.until_ms),
                detail: words(),
                ..l
            }),
            _ if wait.is_some_and(|ms| ms > SHORT_WAIT_MS) => Some(limits::Limit {
                kind: Kind::Rate,
                until_ms: until,
                detail: words(),
            }),
            _ if last && status == 429 => Some(limits::Limit {
                kind: Kind::Rate,
                until_ms: until,
                detail: format!("{} (still, after the tries)", words()),
            }),
            _ => None,
        }
    }

    /// The JSON body of one request: the two messages, the output bound under `field`, and
    /// streaming (with usage) unless the server answers `plain` only.
    pub(super) fn request_body(&self, q: &Question<'_>, field: &str, plain: bool) -> String {
        let mut body = json!({
            "model": self.model,
            "messages": [
                {"role": "system", "content": q.system},
                {"role": "user", "content": q.user},
            ],
            "temperature": 0,
            "stream": !plain,
            field: q.bound,
        });
        if !plain {
            body["stream_options"] = json!({"include_usage": true});
        }
        body.to_string()
    }

    /// Appends request `n`'s answer to the exchange log: how it ended, how long it took, and
    /// the response text.
    pub(super) fn log_answer(
        &self,
        log: &mut String,
        q: &Question<'_>,
        n: u32,
        field: &str,
        sent: &std::result::Result<Response, Sent>,
        took: f64,
    ) {
        let ending = match sent {
            Ok(r) => match &r.stream {
                Some(st) => format!(
                    "HTTP {}, streamed: {} chunks, {}",
                    r.status,
                    st.chunks,
                    st.ended.describe()
                ),
                None => format!("HTTP {}", r.status),
            },
            Err(e) => format!("no answer: {e}"),
        };
        log.push_str(&format!(
            "=== answer {} (request {n}): POST {} ({field} {}) ===\n{ending}, {took:.3}s\n\
             --- response ---\n{}\n",
            q.answer_no,
            self.endpoint,
            q.bound,
            sent.as_ref().map(|r| r.text.trim_end()).unwrap_or_default()
        ));
    }

    /// The exchange of an HTTP error that is not retried; the service's own failures (down,
    /// overloaded, refusing the credentials) are counted as API errors, not bad answers.
    pub(super) fn refused(
        &self,
        q: &Question<'_>,
        status: u16,
        text: String,
        after: &str,
        seconds: f64,
    ) -> Exchange {
        let reason = format!(
            "{} answered HTTP {status}{after}: {}",
            self.endpoint,
            server_message(&text)
        );
        // The service is down, overloaded or refuses the credentials: an API
        // error, not a bad answer.
        if matches!(status, 401 | 403 | 429) || status >= 500 {
            q.meter.api_error(&reason);
        }
        failure(reason, text, seconds)
    }

    /// Why a prompt refused for its length failed the task: the server's words, the prompt's
    /// size, the limit where the server gives it, and what to set.
    pub(super) fn too_long_reason(&self, q: &Question<'_>, body: &str) -> String {
        let chars = q.system.chars().count() + q.user.chars().count();
        let estimated = chars.div_ceil(prompt::CHARS_PER_TOKEN);
        let (limit, counted) = context_numbers(body);
        let mut reason = format!(
            "the server refused the prompt as longer than the model's context (HTTP 400: {}); \
             the prompt was {chars} characters, ~{estimated} tokens estimated",
            server_message(body)
        );
        if let Some(c) = counted {
            reason.push_str(&format!(" ({c} tokens as the server counted them)"));
        }
        match limit {
            Some(l) => reason.push_str(&format!("; the server's limit is {l} tokens")),
            None => reason.push_str("; the server did not say its limit"),
        }
        reason.push_str("; the prompt was not sent again. ");
        let agent = &self.agent;
        match (self.context_tokens, limit) {
            (None, Some(l)) => reason.push_str(&format!(
                "Set `context_tokens = {l}` under [agents.{agent}] in .tlv4.toml: prompts are \
                 then built to fit, the largest documents summarised"
            )),
            (None, None) => reason.push_str(&format!(
                "Set `context_tokens` under [agents.{agent}] in .tlv4.toml to the server's \
                 context size: prompts are then built to fit, the largest documents summarised"
            )),
            (Some(c), _) => reason.push_str(&format!(
                "`context_tokens` is {c}: lower it, `prompt_budget` or `max_output_tokens` under \
                 [agents.{agent}], or give the server a larger context"
            )),
        }
        reason
    }

    /// One request: the status and what came back (read whole, or streamed), or why nothing
    /// did.
    /// How long a request of `q` may take from now: the agent's timeout, cut short at the
    /// deadline of the run.
    pub(super) fn limit(&self, q: &Question<'_>) -> Duration {
        crate::command::bounded(self.timeout, q.deadline)
    }

    /// The time a request of `q` that ran out of it had, in words.
    pub(super) fn allowed(&self, q: &Question<'_>) -> String {
        match q.deadline {
            Some(d) if Instant::now() >= d => {
                "the time the run had left (its deadline, a discussion turn's limit)".into()
            }
            _ => tlv4_core::process::duration::format_duration(self.timeout),
        }
    }

    pub(super) fn post(&self, body: &str, q: &Question<'_>) -> std::result::Result<Response, Sent> {
        let mut req = self
            .http
            .post(&self.endpoint)
            .header("Content-Type", "application/json")
            .header("Accept", "text/event-stream, application/json");
        if let Some(key) = &self.api_key {
            req = req.header("Authorization", format!("Bearer {}", key.trim()));
        }
        if q.deadline.is_some() {
            req = req.config().timeout_global(Some(self.limit(q))).build();
        }
        let mut resp = req.send(body.as_bytes()).map_err(Sent::from)?;
        let status = resp.status().as_u16();
        // How long a server asks to be left alone (a rate limit), in milliseconds: seconds
        // or an HTTP date.
        let wait = resp
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| limits::retry_after_ms(v, tlv4_core::clock::now_ms()));
        let streamed = resp
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.to_ascii_lowercase().contains("text/event-stream"));
        if streamed && (200..300).contains(&status) {
            let reader = resp.body_mut().with_config().limit(RESPONSE_LIMIT).reader();
            let st = read_stream(reader, q.bound, q.meter);
            // Dropping the response here closes a stream left unread.
            drop(resp);
            return Ok(Response {
                status,
                text: st.raw.clone(),
                wait,
                stream: Some(st),
            });
        }
        let text = resp
            .body_mut()
            .with_config()
            .limit(RESPONSE_LIMIT)
            .lossy_utf8(true)
            .read_to_string()
            .map_err(Sent::from)?;
        Ok(Response {
            status,
            text,
            wait,
            stream: None,
        })
    }
}

/// The exchange of a plain (not streamed) successful answer: the completion's text, or
/// why the body is not one.
pub(super) fn answered(q: &Question<'_>, text: String, seconds: f64) -> Exchange {
    let mut ex = match completion(&text) {
        Ok((answer, usage, finish)) => Exchange {
            cut: (finish.as_deref() == Some("length")).then(|| cut_problem(&answer, q.bound)),
            reply: Ok(answer),
            body: text,
            usage,
            stopped: None,
        },
        Err(reason) => failure(reason, text, seconds),
    };
    q.meter.add(ex.usage.output_tokens);
    ex.usage.seconds = seconds;
    ex
}

/// A failed exchange: `reason`, the response body, and the seconds spent so far.
pub(super) fn failure(reason: String, body: String, seconds: f64) -> Exchange {
    Exchange {
        reply: Err(reason),
        body,
        usage: Usage {
            seconds,
            ..Usage::default()
        },
        cut: None,
        stopped: None,
    }
}

/// What one question came to.
pub(super) struct Exchange {
    /// The answer's text, or why there is none.
    pub(super) reply: std::result::Result<String, String>,
    /// The last response body (a stream: what arrived of it).
    pub(super) body: String,
    /// Tokens, model and time.
    pub(super) usage: Usage,
    /// The problem to send back when the answer was cut at the output bound and its result
    /// block is not valid.
    pub(super) cut: Option<String>,
    /// Why the run stops here rather than fail or go on: a limit of the service
    /// ([`Error::Limited`]), or the task's bound crossed while the answer streamed
    /// ([`Error::OverBound`]).
    pub(super) stopped: Option<Error>,
}

/// One question to the model.
pub(super) struct Question<'a> {
    pub(super) system: &'a str,
    pub(super) user: &'a str,
    /// The output bound, in tokens.
    pub(super) bound: u64,
    pub(super) answer_no: u32,
    /// Counts the tokens as they arrive.
    pub(super) meter: &'a Meter,
    /// When the run must be over (a discussion turn's limit), if sooner than the timeout.
    pub(super) deadline: Option<Instant>,
}

/// One response.
pub(super) struct Response {
    pub(super) status: u16,
    /// The body as read; for a stream, the lines that arrived.
    pub(super) text: String,
    /// What `Retry-After` asks for, in milliseconds.
    pub(super) wait: Option<u64>,
    /// The answer assembled from a stream, if the server streamed.
    pub(super) stream: Option<Streamed>,
}

/// Whether an error message is about the streaming fields: `stream_options`, `stream`
/// quoted, or streaming.
pub(super) fn refuses_streaming(message: &str) -> bool {
    let m = message.to_ascii_lowercase();
    [
        "stream_options",
        "streaming",
        "'stream'",
        "\"stream\"",
        "`stream`",
    ]
    .iter()
    .any(|w| m.contains(w))
}

/// Whether an HTTP 400 body says the prompt is longer than the model's context (llama.cpp's
/// `exceed_context_size_error`, OpenAI's `context_length_exceeded`, and the words servers use).
pub(super) fn too_long(body: &str) -> bool {
    let b = body.to_ascii_lowercase();
    [
        "context_length_exceeded",
        "exceed_context_size",
        "exceeds the available context size",
        "maximum context length",
        "context length",
        "context window",
        "prompt is too long",
        "too many tokens",
    ]
    .iter()
    .any(|m| b.contains(m))
}

/// The context size and the prompt's tokens, as far as a refusal gives them: llama.cpp's
/// `n_ctx` and `n_prompt_tokens`, or OpenAI's "maximum context length is N tokens … resulted
/// in M tokens".
pub(super) fn context_numbers(body: &str) -> (Option<u64>, Option<u64>) {
    let v: Value = serde_json::from_str(body).unwrap_or(Value::Null);
    let err = &v["error"];
    let field = |k: &str| err[k].as_u64().or(v[k].as_u64());
    let msg = server_message(body).to_ascii_lowercase();
    let after = |phrase: &str| {
        let at = msg.find(phrase)? + phrase.len();
        let digits: String = msg[at..]
            .trim_start()
            .chars()
            .take_while(|c| c.is_ascii_digit() || *c == ',')
            .filter(char::is_ascii_digit)
            .collect();
        digits.parse::<u64>().ok()
    };
    let limit = field("n_ctx")
        .or_else(|| after("maximum context length is"))
        .or_else(|| after("context size of"))
        .or_else(|| after("context length of"));
    let counted = field("n_prompt_tokens")
        .or_else(|| after("resulted in"))
        .or_else(|| after("you requested"));
    (limit, counted)
}

/// Why a request got no response.
pub(super) enum Sent {
    /// It took longer than the timeout.
    Timeout,
    /// A failure that may pass (a refused or reset connection).
    Transient(String),
    /// Anything else.
    Other(String),
}

impl From<ureq::Error> for Sent {
    fn from(e: ureq::Error) -> Sent {
        use std::io::ErrorKind as K;
        match &e {
            ureq::Error::Timeout(_) => Sent::Timeout,
            ureq::Error::Io(io) if matches!(io.kind(), K::TimedOut | K::WouldBlock) => {
                Sent::Timeout
            }
            ureq::Error::Io(io)
                if matches!(
                    io.kind(),
                    K::ConnectionRefused
                        | K::ConnectionReset
                        | K::ConnectionAborted
                        | K::NotConnected
                        | K::BrokenPipe
                        | K::UnexpectedEof
                ) =>
            {
                Sent::Transient(e.to_string())
            }
            ureq::Error::ConnectionFailed | ureq::Error::Protocol(_) => {
                Sent::Transient(e.to_string())
            }
            _ => Sent::Other(e.to_string()),
        }
    }
}

impl std::fmt::Display for Sent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Sent::Timeout => f.write_str("timed out"),
            Sent::Transient(e) | Sent::Other(e) => f.write_str(e),
        }
    }
}

/// The answer's text and usage from a chat-completions response body.
pub(super) fn completion(
    body: &str,
) -> std::result::Result<(String, Usage, Option<String>), String> {
    let value: Value = serde_json::from_str(body).map_err(|e| {
        format!(
            "the server's response is not valid JSON ({e}); it begins: {}",
            excerpt(body, 200)
        )
    })?;
    let Some(choice) = value
        .get("choices")
        .and_then(Value::as_array)
        .and_then(|c| c.first())
    else {
        return Err(match value.get("error") {
            Some(_) => format!("the server reported an error: {}", server_message(body)),
            None => format!(
                "the server's response has no `choices`; it begins: {}",
                excerpt(body, 200)
            ),
        });
    };
    let content = &choice["message"]["content"];
    let text = match content {
        Value::String(s) => s.clone(),
        // Some servers send a list of parts.
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join(""),
        _ => String::new(),
    };
    if text.trim().is_empty() {
        let finish = choice["finish_reason"].as_str().unwrap_or("not given");
        return Err(format!(
            "the model's answer has no text (finish_reason: {finish})"
        ));
    }
    let tokens = |k: &str| value["usage"][k].as_u64().unwrap_or(0);
    let usage = Usage {
        input_tokens: tokens("prompt_tokens"),
        output_tokens: tokens("completion_tokens"),
        // Where the service says how much of the prompt its cache served.
        cached_input_tokens: value["usage"]["prompt_tokens_details"]["cached_tokens"]
            .as_u64()
            .unwrap_or(0),
        model: value["model"]
            .as_str()
            .filter(|m| !m.is_empty())
            .map(str::to_owned),
        ..Usage::default()
    };
    let finish = choice["finish_reason"].as_str().map(str::to_owned);
    Ok((text, usage, finish))
}

/// The error message in an error response (`{"error": {"message": …}}`, `{"error": "…"}`,
/// `{"detail": …}`), else the start of the body.
pub(super) fn server_message(body: &str) -> String {
    if let Ok(v) = serde_json::from_str::<Value>(body) {
        let candidates = [
            &v["error"]["message"],
            &v["error"],
            &v["message"],
            &v["detail"],
        ];
        for c in candidates {
            if let Some(s) = c.as_str().filter(|s| !s.trim().is_empty()) {
                return excerpt(s, 500);
            }
        }
    }
    match excerpt(body, 500) {
        s if s.is_empty() => "(empty body)".to_owned(),
        s => s,
    }
}
