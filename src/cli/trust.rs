//! `git tlv4 trust`: allow what the repository supplies to run — the agents its `.tlv4.toml`
//! defines or names, the files inside the repository they run, the overrides under
//! `.tlv4/specs/` and its own test command — after showing all of it.

use crate::agents::CodeTree;
use tlv4_core::config::Config;
use tlv4_core::environment::Plan;
use tlv4_core::error::Result;
use tlv4_core::trust::{Files, Item};

use super::Ctx;
use tlv4_core::text::short_id;

/// Arguments of `trust`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Forget the trust instead
    #[arg(long, conflicts_with = "show")]
    pub revoke: bool,
    /// Only show what trust covers and whether it is trusted
    #[arg(long)]
    pub show: bool,
    /// With --show: print JSON
    #[arg(long, requires = "show")]
    pub json: bool,
}

pub(crate) fn run(ctx: &Ctx<'_>, args: Args) -> Result<()> {
    let store = ctx.store()?;
    let root = store.workdir();
    if args.revoke {
        if tlv4_core::trust::revoke(root)? {
            ctx.ui.status("this repository is no longer trusted");
        } else {
            ctx.ui.status("this repository was not trusted");
        }
        return Ok(());
    }
    let files = Files::read(root)?;
    let config = files.config(root)?;
    let code = head_code(&store);
    let (plan, setup) = setup_of(code.as_ref(), &config);
    if args.show {
        let items = tlv4_core::trust::everything(root, &files, &config, &setup)?;
        let stored = tlv4_core::trust::Stored::of(&config);
        let judged = tlv4_core::trust::judge(&stored, &items);
        let all = judged.iter().all(|(_, s)| s.is_none());
        let (key, state) = match stored {
            tlv4_core::trust::Stored::Record(_) if all => ("trusted", "is trusted"),
            tlv4_core::trust::Stored::Record(_) => {
                ("changed", "is trusted, but NOT what it holds now")
            }
            tlv4_core::trust::Stored::Old => {
                ("old", "was trusted by an older git-tlv4 (trust it again)")
            }
            tlv4_core::trust::Stored::None => ("untrusted", "is NOT trusted"),
        };
        if args.json {
            let shown = Shown {
                code: code.as_ref(),
                config: &config,
                plan: &plan,
            };
            ctx.ui.json(&show_json(&store, &shown, key, &judged));
            return Ok(());
        }
        ctx.ui
            .out(format!("the repository at {} {state}", root.display()));
        let shown = Shown {
            code: code.as_ref(),
            config: &config,
            plan: &plan,
        };
        describe(ctx, &shown, &items, Some(&judged));
        return Ok(());
    }
    let items = tlv4_core::trust::trust_read(root, &files, &config, &setup)?;
    ctx.ui.out(format!(
        "trusted the repository at {}; it may run:",
        root.display()
    ));
    let shown = Shown {
        code: code.as_ref(),
        config: &config,
        plan: &plan,
    };
    describe(ctx, &shown, &items, None);
    Ok(())
}

/// What `trust` shows besides the files it covers: the configuration, and the code at `HEAD`
/// with the environment setup it declares.
struct Shown<'a> {
    code: Option<&'a CodeTree>,
    config: &'a Config,
    plan: &'a Plan,
}

/// The code at `HEAD`, when there is a commit.
fn head_code(store: &tlv4_store::store::Store) -> Option<CodeTree> {
    store
        .head_commit()
        .and_then(|c| store.commit_tree(c))
        .and_then(|t| CodeTree::from_tree(store.repo(), t))
        .ok()
}

/// The environment setup of `code` with `config` (its `[environment] setup`, else what the
/// lockfiles and manifests of the code declare), and the files of it trust covers, with their
/// blob ids in `code`.
fn setup_of(code: Option<&CodeTree>, config: &Config) -> (Plan, Vec<Item>) {
    let detected = code.map_or_else(Vec::new, |code| {
        let paths: Vec<&str> = code.files().iter().map(|f| f.path.as_str()).collect();
        tlv4_core::environment::detect(&paths, &|p| code.read_path(p))
    });
    let plan = Plan::new(config.environment.setup.as_deref(), detected);
    let items = tlv4_core::trust::setup_items(&plan, &|p| code?.find(p).map(|f| f.id.to_string()));
    (plan, items)
}

/// The environment setup of the code at `HEAD` with `config`, and the files of it trust
/// covers: what `git tlv4 trust` records of the setup.
pub(crate) fn head_setup(store: &tlv4_store::store::Store, config: &Config) -> (Plan, Vec<Item>) {
    setup_of(head_code(store).as_ref(), config)
}

/// The roles and perspectives that use agent `name`.
fn used_by(config: &Config, name: &str) -> Vec<String> {
    let mut used: Vec<String> = config
        .roles
        .iter()
        .filter(|(_, l)| l.names().iter().any(|n| n == name))
        .map(|(r, _)| r.clone())
        .collect();
    used.extend(
        config
            .discuss
            .perspectives
            .iter()
            .filter(|(_, n)| *n == name)
            .map(|(p, _)| format!("perspective {p}")),
    );
    used
}

/// `trust --show --json`: what `--show` prints, as one document. `state` is `trusted`,
/// `changed` (trusted, but not what the repository holds now), `old` or `untrusted`.
fn show_json(
    store: &tlv4_store::store::Store,
    shown: &Shown<'_>,
    state: &str,
    judged: &[(&Item, Option<&'static str>)],
) -> serde_json::Value {
    let config = shown.config;
    let agents: Vec<serde_json::Value> = tlv4_core::trust::configured_agents(config)
        .iter()
        .map(|(name, a)| {
            let env: std::collections::BTreeMap<&String, &str> = a
                .env
                .iter()
                .map(|(k, v)| {
                    let v = if tlv4_core::trust::looks_secret(k) {
                        "***"
                    } else {
                        v.as_str()
                    };
                    (k, v)
                })
                .collect();
            serde_json::json!({
                "name": name, "driver": a.driver, "used_by": used_by(config, name),
                "program": a.program, "args": a.args, "env": env, "url": a.url,
                "model": a.model, "home": a.home,
            })
        })
        .collect();
    let files: Vec<serde_json::Value> = judged
        .iter()
        .map(|(i, why)| {
            serde_json::json!({
                "path": i.path, "id": i.id, "what": i.why, "trusted": why.is_none(),
                "problem": why,
            })
        })
        .collect();
    let tests = match &config.tests.command {
        Some(c) => serde_json::json!({ "command": c, "from": "[tests] command of .tlv4.toml" }),
        None => match detected_tests(shown.code) {
            Some((cmd, evidence)) => serde_json::json!({ "command": cmd, "from": evidence }),
            None => serde_json::Value::Null,
        },
    };
    let environment = serde_json::json!({
        "from": if config.environment.setup.is_some() { "configured" } else { "detected" },
        "steps": shown.plan.steps,
    });
    serde_json::json!({
        "schema": super::JSON_SCHEMA,
        "repository": store.workdir(),
        "state": state,
        "agents": agents,
        "files": files,
        "environment": environment,
        "sandbox": tlv4_core::sandbox::level().describe(),
        "tests": tests,
    })
}

/// The test command detected in `code` (at `HEAD`), with the file that shows it.
fn detected_tests(code: Option<&CodeTree>) -> Option<(String, String)> {
    crate::quality::tester::detected_command(code?)
}

/// Prints everything a user needs to judge the trust: each agent with its program, args,
/// environment (secret-looking values masked), url and home; the files covered; the
/// environment setup; the test command.
fn describe(
    ctx: &Ctx<'_>,
    shown: &Shown<'_>,
    items: &[Item],
    judged: Option<&[(&Item, Option<&'static str>)]>,
) {
    let config = shown.config;
    let agents = tlv4_core::trust::configured_agents(config);
    if agents.is_empty() {
        ctx.ui
            .out("agents: none that run programs (every role runs on the builtin agent)");
    } else {
        ctx.ui.out("agents:");
    }
    for (name, a) in &agents {
        let used = used_by(config, name);
        let used = if used.is_empty() {
            "named by no role (only with --agent)".to_owned()
        } else {
            format!("for {}", used.join(", "))
        };
        ctx.ui.out(format!("  {name}: {} driver, {used}", a.driver));
        let program = a
            .program
            .clone()
            .unwrap_or_else(|| match a.driver.as_str() {
                "openai" => "(none: HTTP)".into(),
                d => format!("{d} (found in PATH)"),
            });
        ctx.ui.out(format!("    program: {program}"));
        if !a.args.is_empty() {
            ctx.ui.out(format!("    args: {}", a.args.join(" ")));
        }
        if !a.env.is_empty() {
            let env: Vec<String> = a
                .env
                .iter()
                .map(|(k, v)| {
                    if tlv4_core::trust::looks_secret(k) {
                        format!("{k}=***")
                    } else {
                        format!("{k}={v}")
                    }
                })
                .collect();
            ctx.ui.out(format!("    env: {}", env.join(" ")));
        }
        if let Some(u) = &a.url {
            ctx.ui
                .out(format!("    url: {u} (your code is sent there)"));
        }
        if let Some(m) = &a.model {
            ctx.ui.out(format!("    model: {m}"));
        }
        if a.driver != "openai" {
            ctx.ui.out(format!(
                "    home: {}",
                a.home
                    .as_deref()
                    .unwrap_or("(a fresh temporary one per run)")
            ));
        }
    }
    if items.is_empty() {
        ctx.ui.out("files covered: none");
    } else {
        ctx.ui.out("files covered (git blob id, path, what it is):");
    }
    for (n, i) in items.iter().enumerate() {
        let state = match judged.map(|j| j[n].1) {
            Some(Some(why)) => format!("  -- NOT trusted: {why}"),
            Some(None) => "  -- trusted".into(),
            None => String::new(),
        };
        ctx.ui.out(format!(
            "  {} {} ({}){state}",
            short_id(&i.id),
            i.path,
            i.why
        ));
    }
    describe_setup(ctx, shown);
    ctx.ui.out(format!(
        "sandbox: {} — agents write only their checkout, home and run files, read the system, their own installation, their checkout and the repository's git directory, and connect over TCP only to port 443 and the ports their URLs name; setup and tests write only their checkout, its temporary directory and the package caches",
        tlv4_core::sandbox::level().describe()
    ));
    if let Some(c) = &config.tests.command {
        ctx.ui
            .out(format!("tests: `{c}` ([tests] command of .tlv4.toml)"));
        return;
    }
    match detected_tests(shown.code) {
        Some((cmd, evidence)) => ctx.ui.out(format!(
            "tests: the repository's own test command, now `{cmd}` (from {evidence}), as detected in each session's code"
        )),
        None => ctx
            .ui
            .out("tests: no test command detected now; a detected one runs in sessions"),
    }
}

/// Prints the environment setup: where each step runs, what decided it, its commands, the
/// programs it needs and the files whose change runs it again.
fn describe_setup(ctx: &Ctx<'_>, shown: &Shown<'_>) {
    let plan = shown.plan;
    if plan.steps.is_empty() {
        ctx.ui
            .out("environment setup: none (no lockfile or manifest found in the code at HEAD)");
        return;
    }
    let from = if shown.config.environment.setup.is_some() {
        "[environment] setup of .tlv4.toml, instead of what the code at HEAD declares"
    } else {
        "detected in the code at HEAD"
    };
    ctx.ui.out(format!(
        "environment setup ({from}; it runs in each checkout before agents and tests):"
    ));
    for step in &plan.steps {
        let head = format!(
            "  {}: {}, from {}",
            step.place(),
            step.ecosystem().name(),
            step.evidence
        );
        if step.commands.is_empty() {
            ctx.ui.out(format!(
                "{head}: nothing to install (its caches are shared)"
            ));
        } else {
            ctx.ui.out(head);
        }
        for command in &step.commands {
            ctx.ui.out(format!("    run: {command}"));
        }
        for (program, how) in &step.tools {
            ctx.ui.out(format!("    needs: {program} ({how})"));
        }
        let inputs = step.inputs.join(", ");
        match (step.inputs.is_empty(), step.commands.is_empty()) {
            (true, _) => {}
            (false, true) => ctx.ui.out(format!("    inputs: {inputs}")),
            (false, false) => ctx
                .ui
                .out(format!("    inputs (a change runs it again): {inputs}")),
        }
    }
}
