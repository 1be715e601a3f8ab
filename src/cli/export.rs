//! `git tlv4 export`: a completed session's code on a clean branch `tlv4-export/<SID>`,
//! ready to merge (the completion action `export`, for a session that was kept).

use crate::coordinator::complete::{self, Done};
use tlv4_core::error::Result;
use tlv4_core::model::Completion;

use super::Ctx;

/// Arguments of `export`.
#[derive(Debug, clap::Args)]
pub struct Args {}

pub(crate) fn run(ctx: &Ctx<'_>, _args: Args) -> Result<()> {
    let (store, sid) = ctx.session()?;
    let files = tlv4_core::trust::Files::read(store.workdir())?;
    let export_spec = files.config(store.workdir())?.session.export_spec;
    if let Done::Exported(name) = complete::apply(&store, &sid, &Completion::Export, export_spec)? {
        let branch = tlv4_store::store::refs::short_branch(&name);
        ctx.ui.status(format!(
            "exported: {branch} holds the result without the run records"
        ));
        ctx.ui.status(format!("land it: git merge {branch}"));
        ctx.ui.out(branch);
    }
    Ok(())
}
