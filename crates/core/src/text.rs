//! Text made to fit: one line, a length, a table cell. Every part of the tool that shortens
//! what it shows uses these, so that each name means one thing everywhere.
//!
//! Lengths are counted in characters (`char`s), never bytes, so a cut never splits one.

/// `text` on one line: every run of white space (new lines included) as one space, none at
/// either end.
pub fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `text` cut after its first `max` characters, with `…` after the cut; unchanged when it
/// has no more than `max`.
pub fn clip(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}

/// [`one_line`], then [`clip`]: the start of a text, for a message or a list.
pub fn excerpt(text: &str, max: usize) -> String {
    clip(&one_line(text), max)
}

/// [`one_line`] cut at a word boundary to at most `max` characters, the `…` included (inside
/// a word only when the first word alone is longer): for prose a reader sees whole words of.
pub fn shorten(text: &str, max: usize) -> String {
    let text = one_line(text);
    if text.chars().count() <= max {
        return text;
    }
    let mut out = String::new();
    for word in text.split(' ') {
        if out.chars().count() + word.chars().count() + 2 > max {
            break;
        }
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
    }
    if out.is_empty() {
        out = text.chars().take(max.saturating_sub(1)).collect();
    }
    out.push('…');
    out
}

/// `text` as a Markdown table cell: [`one_line`], its bars escaped.
pub fn cell(text: &str) -> String {
    one_line(text).replace('|', "\\|")
}

/// A Markdown code fence for `text`: backticks, at least `min`, one more than the longest run
/// of backticks inside it, so that no line of the text can close the block.
pub fn fence(text: &str, min: usize) -> String {
    let (mut longest, mut run) = (0, 0);
    for c in text.chars() {
        run = if c == '`' { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    "`".repeat((longest + 1).max(min))
}

/// The short form of a commit id (its first 7 hex digits), as `git log --oneline` shows it.
pub fn short_id(id: &str) -> &str {
    id.get(..7).unwrap_or(id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_shape_keeps_to_its_length() {
        assert_eq!(one_line("  a\n\tb  c \n"), "a b c");
        assert_eq!(clip("abcdef", 3), "abc…");
        assert_eq!(clip("abc", 3), "abc");
        assert_eq!(clip("ééé", 2), "éé…", "characters, not bytes");
        assert_eq!(excerpt("a\nb c d", 3), "a b…");
        assert_eq!(shorten("one two three four", 12), "one two…");
        assert_eq!(shorten("onetwothree", 6), "onetw…");
        assert_eq!(shorten("short", 12), "short");
        assert_eq!(cell("a | b\nc"), "a \\| b c");
        assert_eq!(short_id("0123456789"), "0123456");
        assert_eq!(short_id("01"), "01");
        assert_eq!(fence("a ``` b `` c", 3), "````");
        assert_eq!(fence("plain", 4), "````");
    }
}
