//! `git tlv4 trust`: allow the programs a repository's `.tlv4.toml` names to run.

use crate::config::{Config, FILE};
use crate::error::{Error, Result};

use super::Ctx;

/// Arguments of `trust`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Forget the trust instead
    #[arg(long, conflicts_with = "show")]
    pub revoke: bool,
    /// Only say whether the current file is trusted
    #[arg(long)]
    pub show: bool,
}

pub(crate) fn run(ctx: &Ctx<'_>, args: Args) -> Result<()> {
    let store = ctx.store()?;
    let root = store.workdir();
    if args.revoke {
        if crate::trust::revoke(root)? {
            ctx.ui.status(format!("{FILE} is no longer trusted"));
        } else {
            ctx.ui.status(format!("{FILE} was not trusted"));
        }
        return Ok(());
    }
    let path = root.join(FILE);
    if !path.exists() {
        return Err(Error::state(
            format!("there is no {FILE} at {}", root.display()),
            Some("nothing to trust: without it every role runs on the builtin agent".into()),
        ));
    }
    let config = Config::load(root)?;
    let named: Vec<String> = config
        .agents
        .iter()
        .filter(|(_, a)| crate::trust::needs_trust(a))
        .map(|(n, a)| {
            let program = a.program.clone().unwrap_or_else(|| a.driver.clone());
            format!("  {n}: {} {}", a.driver, program)
        })
        .collect();
    if args.show {
        let state = match crate::trust::check(root, &named) {
            Ok(()) if named.is_empty() => "names no programs; nothing needs trust",
            Ok(()) => "is trusted",
            Err(_) => "is NOT trusted",
        };
        ctx.ui.out(format!("{} {state}", path.display()));
        return Ok(());
    }
    let id = crate::trust::trust(root)?;
    ctx.ui.out(format!(
        "trusted {} (blob {}); it may run:",
        path.display(),
        super::short(&id)
    ));
    if named.is_empty() {
        ctx.ui.out("  nothing but the builtin agent");
    }
    for n in named {
        ctx.ui.out(n);
    }
    Ok(())
}
