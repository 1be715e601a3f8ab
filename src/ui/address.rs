//! Hints that can be pasted: with more than one session, a `git tlv4 VERB …` line the tool
//! prints names the session it means, since without `--session` the command would not know.

/// The commands that act on one session, so take `--session`. The others (`start`, `list`,
/// `gc`, `review`, …) act on the repository or make a session of their own.
const SESSION_VERBS: [&str; 18] = [
    "status", "log", "cost", "task", "msg", "undo", "rollback", "fork", "resume", "reset",
    "approve", "revise", "feedback", "recheck", "improve", "abort", "delete", "push",
];

/// `line` with `--session SID` after every `git tlv4 ` that starts a command in
/// [`SESSION_VERBS`] and says no `--session` of its own (up to the closing backtick, or the
/// end of the line).
pub fn with_session(line: &str, sid: &str) -> String {
    const CALL: &str = "git tlv4 ";
    let mut out = String::with_capacity(line.len() + sid.len() + 12);
    let mut rest = line;
    while let Some(at) = rest.find(CALL) {
        let (before, after) = rest.split_at(at + CALL.len());
        out.push_str(before);
        let verb = after
            .split(|c: char| !c.is_ascii_alphanumeric() && c != '-')
            .next()
            .unwrap_or("");
        let command = after.split('`').next().unwrap_or(after);
        if SESSION_VERBS.contains(&verb) && !command.contains("--session") {
            out.push_str("--session ");
            out.push_str(sid);
            out.push(' ');
        }
        rest = after;
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::with_session;

    #[test]
    fn names_the_session_in_commands_that_need_it() {
        let sid = "TLV4-a-20261129";
        assert_eq!(
            with_session("  git tlv4 approve", sid),
            "  git tlv4 --session TLV4-a-20261129 approve"
        );
        assert_eq!(
            with_session("run `git tlv4 resume --retry`, then `git tlv4 list`", sid),
            "run `git tlv4 --session TLV4-a-20261129 resume --retry`, then `git tlv4 list`"
        );
        assert_eq!(
            with_session("git tlv4 fork --session TLV4-b --at X", sid),
            "git tlv4 fork --session TLV4-b --at X"
        );
        assert_eq!(
            with_session("start one with `git tlv4 start \"TEXT\"`", sid),
            "start one with `git tlv4 start \"TEXT\"`"
        );
        assert_eq!(with_session("no command here", sid), "no command here");
    }
}
