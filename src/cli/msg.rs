//! `git tlv4 msg send|list`: the team message bus, stored as git notes.

use tlv4_core::error::{Error, Result};
use tlv4_core::model::Message;
use tlv4_store::store::notes_ref;

use super::Ctx;
use tlv4_core::text::short_id;

/// Arguments of `msg`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// What to do
    #[command(subcommand)]
    pub action: Action,
}

/// The message actions.
#[derive(Debug, clap::Subcommand)]
pub enum Action {
    /// Send a message (a JSON line in the note of the session tip)
    Send {
        /// Sending role
        #[arg(long)]
        from: String,
        /// Receiving role (default: the coordinator)
        #[arg(long)]
        to: Option<String>,
        /// Message type, e.g. state_update, research_ready, blocker
        #[arg(long = "type", value_name = "TYPE")]
        kind: String,
        /// Structured payload, as JSON
        #[arg(long, value_name = "JSON")]
        data: Option<String>,
        /// One-line summary
        summary: String,
    },
    /// List messages, oldest first
    List {
        /// Only messages of this type
        #[arg(long = "type", value_name = "TYPE")]
        kind: Option<String>,
        /// Print JSON
        #[arg(long)]
        json: bool,
    },
}

pub(crate) fn run(ctx: &Ctx<'_>, args: Args) -> Result<()> {
    let (store, sid) = ctx.session()?;
    match args.action {
        Action::Send {
            from,
            to,
            kind,
            data,
            summary,
        } => {
            let data = match data {
                None => None,
                Some(text) => Some(
                    serde_json::from_str::<serde_json::Value>(&text)
                        .map_err(|e| Error::Invalid(format!("--data is not valid JSON: {e}")))?,
                ),
            };
            for (what, value) in [("--from", &from), ("--type", &kind)] {
                if value.trim().is_empty() {
                    return Err(Error::Invalid(format!("{what} is empty")));
                }
            }
            let message = Message {
                id: tlv4_core::clock::unique_id(),
                ts: tlv4_core::clock::now_rfc3339(),
                from,
                to,
                kind,
                summary,
                data,
            };
            let commit = store.send_message(&sid, &message)?;
            ctx.ui.status(format!(
                "sent {} (see `git notes --ref={} show {}`)",
                message.id,
                notes_ref(&sid).trim_start_matches(tlv4_store::store::refs::NOTES_PREFIX),
                short_id(&commit.to_string())
            ));
        }
        Action::List { kind, json } => {
            let list = store.messages(&sid)?;
            let messages: Vec<&Message> = list
                .messages
                .iter()
                .filter(|m| kind.as_ref().is_none_or(|k| &m.kind == k))
                .collect();
            if !list.unreadable.is_empty() {
                ctx.ui.warn(format!(
                    "{} lines on the bus are not valid messages and were skipped",
                    list.unreadable.len()
                ));
            }
            if json {
                ctx.ui.json(&super::listing("messages", &messages));
                return Ok(());
            }
            let mut out = String::new();
            for m in messages {
                out.push_str(&format!(
                    "{} {} -> {} [{}] {}\n",
                    m.ts,
                    m.from,
                    m.to.as_deref().unwrap_or("coordinator"),
                    m.kind,
                    m.summary
                ));
            }
            ctx.ui.out(out.trim_end());
        }
    }
    Ok(())
}
