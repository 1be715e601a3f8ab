//! `git tlv4 pipelines`: the pipelines this repository can run.

use crate::coordinator::{PipelineSpec, Supervision};
use crate::error::Result;
use crate::model::SessionId;

use super::Ctx;

/// Arguments of `pipelines`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Also show each pipeline's tasks and edges
    #[arg(short, long)]
    pub verbose: bool,
}

pub(crate) fn run(ctx: &Ctx<'_>, args: Args) -> Result<()> {
    let spec = match ctx.store() {
        Ok(store) => PipelineSpec::load(store.workdir())?,
        Err(_) => PipelineSpec::builtin()?,
    };
    let sid: SessionId = "TLV4-example-00000000".parse().expect("a valid id");
    let mut out = String::new();
    for (name, summary) in spec.pipelines() {
        out.push_str(&format!("{name:<18} {summary}\n"));
        if args.verbose {
            for t in spec.dispatch(name, Supervision::On, &sid, "")? {
                let deps: Vec<&str> = t.blocked_by.iter().map(|d| d.as_str()).collect();
                out.push_str(&format!(
                    "    {:<16} {:<11} {}\n",
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
