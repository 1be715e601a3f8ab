//! `git tlv4 pipelines`: the pipelines this repository can run.

use crate::coordinator::{PipelineSpec, Supervision};
use tlv4_core::error::Result;
use tlv4_core::model::SessionId;

use super::Ctx;

/// Arguments of `pipelines`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Also show each pipeline's tasks and edges
    #[arg(short, long)]
    pub verbose: bool,
    /// Print JSON: every pipeline with its tasks and edges
    #[arg(long)]
    pub json: bool,
}

/// The JSON of `pipelines --json`.
#[derive(Debug, serde::Serialize)]
struct PipelinesJson {
    /// The version of this document's shape.
    schema: u32,
    pipelines: Vec<PipelineJson>,
}

#[derive(Debug, serde::Serialize)]
struct PipelineJson {
    name: String,
    summary: String,
    /// The tasks a session of it starts with (supervision on), in display order.
    tasks: Vec<TaskJson>,
}

#[derive(Debug, serde::Serialize)]
struct TaskJson {
    id: String,
    role: String,
    blocked_by: Vec<String>,
}

pub(crate) fn run(ctx: &Ctx<'_>, args: Args) -> Result<()> {
    let spec = match ctx.store() {
        Ok(store) => PipelineSpec::load(store.workdir())?,
        Err(_) => PipelineSpec::builtin()?,
    };
    let sid: SessionId = "TLV4-example-00000000".parse().expect("a valid id");
    if args.json {
        let mut pipelines = Vec::new();
        for (name, summary) in spec.pipelines() {
            let tasks = spec
                .dispatch(name, Supervision::On, &sid, "")?
                .into_iter()
                .map(|t| TaskJson {
                    id: t.id.to_string(),
                    role: t.role.to_string(),
                    blocked_by: t.blocked_by.iter().map(ToString::to_string).collect(),
                })
                .collect();
            pipelines.push(PipelineJson {
                name: name.to_string(),
                summary: summary.to_string(),
                tasks,
            });
        }
        ctx.ui.json(&PipelinesJson {
            schema: super::JSON_SCHEMA,
            pipelines,
        });
        return Ok(());
    }
    let mut out = String::new();
    // `[best_of]` of the working tree's configuration: what code tasks of a session started
    // here would run as.
    let best_of = match (args.verbose, ctx.store()) {
        (true, Ok(store)) => tlv4_core::trust::Configuration::read(store.workdir())
            .ok()
            .and_then(|c| c.config.best_of.read().ok().flatten()),
        _ => None,
    };
    if let Some(b) = &best_of {
        out.push_str(&format!(
            "(code tasks run as candidates: best of {}, from [best_of])\n",
            b.describe()
        ));
    }
    for (name, summary) in spec.pipelines() {
        out.push_str(&format!("{name:<18} {summary}\n"));
        if args.verbose {
            for t in spec.dispatch(name, Supervision::On, &sid, "")? {
                let deps: Vec<&str> = t.blocked_by.iter().map(|d| d.as_str()).collect();
                let best = match &best_of {
                    Some(b) if t.role.writes_code() => format!("  [best of {}]", b.describe()),
                    _ => String::new(),
                };
                out.push_str(&format!(
                    "    {:<16} {:<11} {}{best}\n",
                    t.id.as_str(),
                    t.role,
                    deps.join(", ")
                ));
            }
        }
    }
    ctx.ui.out(out.trim_end());
    Ok(())
}
