//! `git tlv4 completions SHELL`: shell completion scripts made from the command line's own
//! definition, and the hidden `git tlv4 __complete` they call for the values only the
//! repository knows (session and task ids).
//!
//! The bash script is clap_complete's, for `git-tlv4`, plus `_git_tlv4`: git's own bash
//! completion calls that function for `git tlv4 …`. It completes a session id after
//! `--session` and a task id where an argument names one, both found by walking the same
//! definitions (value names `SID`, `TASK`, `EVENT`, `EVENT_OR_TASK`), and hands everything
//! else to clap's function with git's words.

use tlv4_core::error::Result;
use tlv4_store::store::Store;

use super::Ctx;

/// The name clap_complete's bash script is made for, renamed to `git-tlv4` after.
const BASH_NAME: &str = "gittlv4";
/// The name of clap_complete's bash function, which `git-tlv4 <TAB>` calls.
const BASH_FN: &str = "_git_tlv4_words";

/// Arguments of `completions`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The shell: bash (with git's `git tlv4` completion), zsh or fish
    #[arg(value_enum)]
    pub shell: Shell,
}

/// The shells a script is made for.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum Shell {
    /// bash; load from ~/.bashrc or a bash-completion directory
    Bash,
    /// zsh; put in a directory of $fpath as `_git-tlv4`
    Zsh,
    /// fish; put in ~/.config/fish/completions/git-tlv4.fish
    Fish,
}

/// Arguments of the hidden `__complete`.
#[derive(Debug, clap::Args)]
pub struct CompleteArgs {
    /// What to list
    #[arg(value_enum)]
    pub what: Values,
}

/// The dynamic values a completion script asks for.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum Values {
    /// The session ids of the repository
    Sessions,
    /// The task ids of the session (`--session`, or the one checked out, or the only one)
    Tasks,
}

pub(crate) fn run(ctx: &Ctx<'_>, args: Args) -> Result<()> {
    let mut cmd = super::definition();
    let mut out = Vec::new();
    match args.shell {
        Shell::Bash => {
            // clap_complete's bash names its cases from the binary's name, and mixes them up
            // when that name has a `-` (`_git__tlv4` walks to cases spelled for
            // `git__subcmd__tlv4`): it generates for a name without one, renamed after.
            clap_complete::generate(clap_complete::Shell::Bash, &mut cmd, BASH_NAME, &mut out);
            let script = String::from_utf8(out).expect("clap_complete writes text");
            let script = script
                .replace(&format!("_{BASH_NAME}() {{"), &format!("{BASH_FN}() {{"))
                .replace(
                    &format!("-F _{BASH_NAME} -o nosort -o bashdefault -o default {BASH_NAME}"),
                    &format!("-F {BASH_FN} -o nosort -o bashdefault -o default git-tlv4"),
                )
                .replace(
                    &format!("-F _{BASH_NAME} -o bashdefault -o default {BASH_NAME}"),
                    &format!("-F {BASH_FN} -o bashdefault -o default git-tlv4"),
                );
            // The hidden `__complete` is for the scripts, not for the user to be offered.
            out = script.replace(" __complete ", " ").into_bytes();
            out.extend_from_slice(git_bash(&super::definition()).as_bytes());
        }
        Shell::Zsh => {
            clap_complete::generate(clap_complete::Shell::Zsh, &mut cmd, "git-tlv4", &mut out)
        }
        Shell::Fish => {
            clap_complete::generate(clap_complete::Shell::Fish, &mut cmd, "git-tlv4", &mut out)
        }
    }
    ctx.ui
        .out_bytes(&out)
        .map_err(|e| tlv4_core::Error::io("cannot write the completion script", e))
}

/// `__complete`: one value a line on stdout. It reads refs (and, for tasks, the session's
/// tip) only, and never fails: outside a repository, or with nothing to list, it prints
/// nothing, since a completion that prints an error into the command line helps nobody.
pub(crate) fn complete(ctx: &Ctx<'_>, args: CompleteArgs) -> Result<()> {
    let Ok(store) = Store::discover(&ctx.cwd) else {
        return Ok(());
    };
    let values: Vec<String> = match args.what {
        Values::Sessions => store
            .sessions()
            .unwrap_or_default()
            .iter()
            .map(ToString::to_string)
            .collect(),
        Values::Tasks => store
            .resolve_session(ctx.session.as_deref())
            .and_then(|sid| store.read_state(&sid))
            .map(|(_, state)| state.ordered().iter().map(|t| t.id.to_string()).collect())
            .unwrap_or_default(),
    };
    if !values.is_empty() {
        let mut text = values.join("\n");
        text.push('\n');
        // A closed pipe ends the listing; nothing to say to a completion.
        let _ = ctx.ui.out_bytes(text.as_bytes());
    }
    Ok(())
}

/// What kind of dynamic value an argument takes, by its value name.
fn dynamic(arg: &clap::Arg) -> Option<&'static str> {
    let names = arg.get_value_names()?;
    match names.first()?.as_str() {
        "SID" => Some("sessions"),
        "TASK" | "EVENT" | "EVENT_OR_TASK" => Some("tasks"),
        _ => None,
    }
}

/// Where each command's arguments take session or task ids: `(path, flag, kind)` with the
/// subcommand path (`task claim`) and the option (`--at`), or an empty flag for a positional.
fn dynamic_args(cmd: &clap::Command) -> Vec<(String, String, &'static str)> {
    fn walk(cmd: &clap::Command, path: &str, out: &mut Vec<(String, String, &'static str)>) {
        for arg in cmd.get_arguments().filter(|a| !a.is_global_set()) {
            let Some(kind) = dynamic(arg) else { continue };
            let flag = arg.get_long().map_or(String::new(), |l| format!("--{l}"));
            out.push((path.to_owned(), flag, kind));
        }
        for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
            let path = if path.is_empty() {
                sub.get_name().to_owned()
            } else {
                format!("{path} {}", sub.get_name())
            };
            walk(sub, &path, out);
        }
    }
    let mut out = Vec::new();
    walk(cmd, "", &mut out);
    out
}

/// The names of the commands that have subcommands (`task`, `msg`), so that the path of
/// words the completion walks stops where the positionals start.
fn groups(cmd: &clap::Command) -> Vec<String> {
    cmd.get_subcommands()
        .filter(|s| s.has_subcommands())
        .map(|s| s.get_name().to_owned())
        .collect()
}

/// The `_git_tlv4` function git's bash completion calls for `git tlv4 …`.
fn git_bash(cmd: &clap::Command) -> String {
    let mut options = String::new();
    let mut positionals = String::new();
    for (path, flag, kind) in dynamic_args(cmd) {
        if flag.is_empty() {
            positionals.push_str(&format!("        \"{path}\") kind={kind} ;;\n"));
        } else {
            options.push_str(&format!("        \"{path}:{flag}\") kind={kind} ;;\n"));
        }
    }
    let groups = groups(cmd).join("|");
    format!(
        r#"
# git's bash completion calls _git_tlv4 for `git tlv4 …`: session and task ids come from
# `git tlv4 __complete`, the rest from the function above, given the words after `git`.
_git_tlv4() {{
    local first=$(( ${{__git_cmd_idx:-1}} + 1 ))
    local cur="${{words[cword]}}" prev="${{words[cword-1]}}"
    local i w path="" session="" kind=""
    for (( i = first; i < cword; i++ )); do
        w="${{words[i]}}"
        case "$w" in
        --session) session="${{words[i+1]}}"; (( i++ )) ;;
        --session=*) session="${{w#--session=}}" ;;
        -*) ;;
        *)
            if [[ -z "$path" ]]; then
                path="$w"
            else
                case "$path" in
                {groups}) path="$path $w" ;;
                esac
            fi
            ;;
        esac
    done
    if [[ "$prev" == "--session" ]]; then
        kind=sessions
    else
        case "$path:$prev" in
{options}        esac
        if [[ -z "$kind" && "$cur" != -* && ( "$prev" != -* || "$prev" == "--" ) ]]; then
            case "$path" in
{positionals}            esac
        fi
    fi
    if [[ -n "$kind" ]]; then
        local values
        values="$(git tlv4 ${{session:+--session "$session"}} __complete "$kind" 2>/dev/null)"
        COMPREPLY=( $(compgen -W "$values" -- "$cur") )
        return 0
    fi
    local COMP_WORDS=( git-tlv4 "${{words[@]:first:cword-first+1}}" )
    local COMP_CWORD=$(( cword - first + 1 ))
    _git_tlv4_words git-tlv4 "$cur" "$prev"
}}
"#
    )
}
