//! The hand-written lexer of the five languages: where a text is between lines (in code, or
//! inside a string or block comment), and from that where each top-level item starts, so that
//! a focused parse reads only the items a change touches.

use std::ops::Range;

use super::Grammar;

/// The byte ranges of the top-level items of `text` that hold the byte ranges `focus`, one
/// range per item, in order (see [`item_starts`] for where an item starts); a large block of
/// members is given as its head, the members the focus reaches and its tail ([`members`]).
/// Items are cut from the layout only; a cut that is wrong shows as errors in the parse.
pub(crate) fn windows(grammar: Grammar, text: &str, focus: &[Range<usize>]) -> Vec<Range<usize>> {
    member_windows(grammar, text, focus)
        .into_iter()
        .map(|(w, _)| w)
        .collect()
}

/// For a member of a block cut into members, the indices of its block's head and tail
/// windows among [`member_windows`].
pub(crate) type Block = Option<(usize, usize)>;

/// [`windows`], each with, for a member of a block cut into members, the indices of its
/// block's head and tail windows: a member is parsed with them, or it parses as something
/// else (a method as a free function).
pub(crate) fn member_windows(
    grammar: Grammar,
    text: &str,
    focus: &[Range<usize>],
) -> Vec<(Range<usize>, Block)> {
    layout(grammar, text, focus).windows
}

/// The layout of a file as its lexer sees it, line by line.
#[derive(Debug, Clone, Default)]
pub(crate) struct Layout {
    /// [`member_windows`].
    pub windows: Vec<(Range<usize>, Block)>,
    /// The byte ranges of the runs of lines that begin inside a string or a block comment
    /// (in order): what a pattern finds there is not code.
    pub quoted: Vec<Range<usize>>,
}

impl Layout {
    /// Whether the line that starts at byte `at` begins inside a string or a comment.
    pub(crate) fn is_quoted(&self, at: usize) -> bool {
        let i = self.quoted.partition_point(|r| r.end <= at);
        self.quoted.get(i).is_some_and(|r| r.contains(&at))
    }
}

/// [`member_windows`], with the lines that begin inside strings and comments, from the one
/// pass of the lexer over the file.
pub(crate) fn layout(grammar: Grammar, text: &str, focus: &[Range<usize>]) -> Layout {
    let mut quoted = Vec::new();
    // The items after the one that holds the end of the focus are not needed: the lexer
    // stops at the start of the next.
    let last = focus.last().map_or(0, |f| f.end);
    let starts = item_starts_noting(grammar, text, 0..text.len(), b"", Some((&mut quoted, last)));
    Layout {
        windows: windows_of(grammar, text, focus, &starts),
        quoted,
    }
}

/// [`member_windows`] of the file whose top-level items start at `starts`.
pub(super) fn windows_of(
    grammar: Grammar,
    text: &str,
    focus: &[Range<usize>],
    starts: &[usize],
) -> Vec<(Range<usize>, Block)> {
    let item = |i: usize| starts[i]..starts.get(i + 1).copied().unwrap_or(text.len());
    let mut out: Vec<Range<usize>> = Vec::new();
    for r in focus {
        let last = r.end.saturating_sub(1).max(r.start);
        let mut i = match starts.binary_search(&r.start) {
            Ok(i) => i,
            Err(i) => i - 1,
        };
        loop {
            let w = item(i);
            if out.last().is_none_or(|l| l.start < w.start) {
                out.push(w.clone());
            }
            if w.end > last || i + 1 == starts.len() {
                break;
            }
            i += 1;
        }
    }
    // A large item that is a block of members (an `impl`, a class, a module) is cut further:
    // its head, the members the focus reaches, its closing line.
    let mut refined = Vec::with_capacity(out.len());
    for w in out {
        match members(grammar, text, w.clone()) {
            Some((head, starts, tail)) => {
                let h = refined.len();
                refined.push((head, None));
                let member = |i: usize| starts[i]..starts.get(i + 1).copied().unwrap_or(tail.start);
                let first = refined.len();
                for i in 0..starts.len() {
                    let m = member(i);
                    if !m.is_empty() && focus.iter().any(|f| f.start < m.end && m.start < f.end) {
                        refined.push((m, None));
                    }
                }
                let t = if tail.is_empty() {
                    h
                } else {
                    refined.push((tail, None));
                    refined.len() - 1
                };
                for m in &mut refined[first..] {
                    m.1 = Some((h, t));
                }
                refined[t].1 = None;
            }
            None => refined.push((w, None)),
        }
    }
    refined
}

/// The parts of the item `item` of `text` when it is a block of members worth cutting (over
/// 60 lines): its head (to the line that opens the block: ending in `{`, or `:` in Python),
/// where its members start (lines at the indentation of the first line after the head, cut as
/// [`item_starts`] cuts the file), and its tail (from the `}` in column 0 that closes it; empty
/// in Python).
pub(super) fn members(
    grammar: Grammar,
    text: &str,
    item: Range<usize>,
) -> Option<(Range<usize>, Vec<usize>, Range<usize>)> {
    let body = &text[item.clone()];
    if memchr::memchr_iter(b'\n', body.as_bytes()).count() <= 60 {
        return None;
    }
    let python = grammar == Grammar::Python;
    // Only containers of members: a function is measured whole, and its statements are no
    // members.
    let declaration = body
        .lines()
        .map(str::trim_start)
        .find(|l| !["#", "@", "//", "/*", "*"].iter().any(|p| l.starts_with(p)))?;
    let words: Vec<&str> = declaration
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
        .take(4)
        .collect();
    let container = match grammar {
        Grammar::Python => &["class"][..],
        Grammar::Rust => &["impl", "mod", "trait"][..],
        Grammar::Go => &[][..],
        _ => &["class", "namespace", "module", "interface"][..],
    };
    let modifiers = [
        "pub", "crate", "super", "self", "in", "unsafe", "export", "default", "abstract", "declare",
    ];
    let kind = words.iter().find(|w| !modifiers.contains(w))?;
    if !container.contains(kind) {
        return None;
    }
    let opener: &[char] = if python { &[':'] } else { &['{'] };
    // The head: up to the end of the first line that opens the block (a comment after it
    // aside).
    let mut at = item.start;
    let head_end = loop {
        let end = text[at..item.end]
            .find('\n')
            .map_or(item.end, |i| at + i + 1);
        let line = text[at..end].trim_end();
        let code = line.split(" //").next().unwrap_or(line).trim_end();
        if code.ends_with(opener) {
            break end;
        }
        if end >= item.end {
            return None;
        }
        at = end;
    };
    // The members' indentation: the first line after the head that is not blank.
    let rest = &text[head_end..item.end];
    let first = rest.lines().find(|l| !l.trim().is_empty())?;
    let indent = &first[..first.len() - first.trim_start().len()];
    if indent.is_empty() {
        return None;
    }
    let tail_start = if python {
        item.end
    } else {
        text[head_end..item.end]
            .rmatch_indices("\n}")
            .next()
            .map(|(i, _)| head_end + i + 1)?
    };
    let mut starts = item_starts(grammar, text, head_end..tail_start, indent.as_bytes());
    if starts.first() != Some(&head_end) {
        starts.insert(0, head_end);
    }
    Some((item.start..head_end, starts, tail_start..item.end))
}

/// Where the top-level items of `text` start, as byte offsets (the first is 0): at a line of
/// code in column 0 that does not go on with the item above ([`continues`]), or at the attribute,
/// decorator and comment lines (`#[`, `@`, `#`, `//`, `/*`, `*`) right above one. A comment in
/// column 0 inside a body starts nothing, nor does a line inside a string or a block comment
/// (see [`Lexer`]).
pub(super) fn item_starts(
    grammar: Grammar,
    text: &str,
    range: Range<usize>,
    indent: &[u8],
) -> Vec<usize> {
    item_starts_noting(grammar, text, range, indent, None)
}

/// [`item_starts`]; with `noting` (`quoted`, `until`), the runs of lines that begin inside a
/// string or a block comment are added to `quoted`, and the starts end with the first one
/// after byte `until` (the rest of the text is not read).
pub(super) fn item_starts_noting(
    grammar: Grammar,
    text: &str,
    range: Range<usize>,
    indent: &[u8],
    mut noting: Option<(&mut Vec<Range<usize>>, usize)>,
) -> Vec<usize> {
    let bytes = &text.as_bytes()[..range.end];
    let mut starts = vec![range.start];
    let mut attached: Option<usize> = None;
    let mut lexer = Lexer::new(grammar);
    let mut at = range.start;
    while at < bytes.len() {
        let end = memchr::memchr(b'\n', &bytes[at..]).map_or(bytes.len(), |i| at + i + 1);
        let full = &bytes[at..end];
        if let Some((quoted, until)) = noting.as_mut() {
            if starts.last().is_some_and(|&s| s > *until) {
                break;
            }
            if lexer.state != Lex::Code {
                match quoted.last_mut() {
                    Some(last) if last.end == at => last.end = end,
                    _ => quoted.push(at..end),
                }
            }
        }
        // A line at a deeper or other indentation goes with the member above it.
        let Some(line) = full.strip_prefix(indent) else {
            let in_comment = matches!(lexer.state, Lex::Block(_));
            lexer.line(full);
            if !in_comment {
                attached = None;
            }
            at = end;
            continue;
        };
        let (in_code, in_comment) = (
            lexer.state == Lex::Code,
            matches!(lexer.state, Lex::Block(_)),
        );
        lexer.line(full);
        if in_comment {
            // A block comment's lines go with it: attached above an item if it is.
        } else if !in_code {
            attached = None;
        } else if line.starts_with(b"#")
            || line.starts_with(b"@")
            || line.starts_with(b"//")
            || line.starts_with(b"/*")
            || line.starts_with(b"*")
            || line.starts_with(b" *")
        {
            attached.get_or_insert(at);
        } else if line.first().is_some_and(|b| !b.is_ascii_whitespace()) && !continues(line) {
            let start = attached.take().unwrap_or(at);
            if start > range.start {
                starts.push(start);
            }
        } else {
            attached = None;
        }
        at = end;
    }
    starts
}

/// Whether a line in column 0 goes on with the item above it: it closes a bracket, opens
/// the body of a signature (`{`, Rust's `where`), goes on with an expression (`.`, `?`, an
/// operator), or is the next clause of a statement (`else`, `elif`, `except`, `finally`,
/// `catch`).
pub(super) fn continues(line: &[u8]) -> bool {
    if matches!(
        line[0],
        b'}' | b')' | b']' | b'{' | b'.' | b'?' | b':' | b',' | b'=' | b'&' | b'|' | b'+' | b'>'
    ) {
        return true;
    }
    ["where", "else", "elif", "except", "finally", "catch"]
        .iter()
        .any(|k| {
            line.starts_with(k.as_bytes())
                && !line
                    .get(k.len())
                    .is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'_')
        })
}

/// Where a text is between lines: in code, or inside a string or block comment that goes on
/// to the next line. It knows each grammar's comments and strings (Rust raw strings and
/// nested block comments, Python triple quotes, Go raw strings, JavaScript template
/// literals, without their `${}`); what it gets wrong shows as parse errors of the items cut.
pub(super) struct Lexer {
    grammar: Grammar,
    state: Lex,
}

#[derive(Clone, Copy, PartialEq)]
pub(super) enum Lex {
    Code,
    /// A block comment, nested this deep.
    Block(u32),
    /// A string that ends at this quote (and that a backslash escapes in).
    Str(u8),
    /// A Rust raw string that ends at `"` and this many `#`.
    Raw(usize),
    /// A Python string that ends at three of this quote.
    Triple(u8),
}

impl Lexer {
    pub(super) fn new(grammar: Grammar) -> Lexer {
        Lexer {
            grammar,
            state: Lex::Code,
        }
    }

    /// The next byte of `line` from `i` on that can start a comment or a string in code.
    pub(super) fn next_stop(&self, line: &[u8], i: usize) -> usize {
        let rest = &line[i..];
        let found = match self.grammar {
            Grammar::Python => memchr::memchr3(b'#', b'"', b'\'', rest),
            Grammar::Rust => memchr::memchr3(b'/', b'"', b'\'', rest),
            // Go and JavaScript quote with backticks too.
            _ => {
                let quotes = memchr::memchr3(b'/', b'"', b'\'', rest);
                let tick = memchr::memchr(b'`', &rest[..quotes.unwrap_or(rest.len())]);
                tick.or(quotes)
            }
        };
        found.map_or(line.len(), |p| i + p)
    }

    /// Reads one line (with its newline).
    pub(super) fn line(&mut self, line: &[u8]) {
        let python = self.grammar == Grammar::Python;
        let rust = self.grammar == Grammar::Rust;
        let mut i = 0;
        while i < line.len() {
            match self.state {
                Lex::Code => {
                    i = self.next_stop(line, i);
                    let Some(&b) = line.get(i) else { break };
                    let next = line.get(i + 1).copied();
                    if (python && b == b'#') || (!python && b == b'/' && next == Some(b'/')) {
                        return;
                    }
                    if !python && b == b'/' && next == Some(b'*') {
                        self.state = Lex::Block(1);
                        i += 2;
                        continue;
                    }
                    if python && (b == b'"' || b == b'\'') && line[i..].starts_with(&[b, b, b]) {
                        self.state = Lex::Triple(b);
                        i += 3;
                        continue;
                    }
                    if rust && b == b'"' {
                        // A raw string: `r"`, `r#"`, `br##"`, the `r` a word of its own.
                        let hashes = line[..i].iter().rev().take_while(|&&c| c == b'#').count();
                        let r = i - hashes;
                        if r > 0 && line[r - 1] == b'r' && raw_prefix(&line[..r - 1]) {
                            self.state = Lex::Raw(hashes);
                            i += 1;
                            continue;
                        }
                    }
                    if rust && b == b'\'' {
                        // A char literal (`'x'`, `'\n'`), else a lifetime.
                        let close = if next == Some(b'\\') {
                            line[i + 2..]
                                .iter()
                                .position(|&c| c == b'\'')
                                .map(|p| i + 3 + p)
                        } else {
                            let len = line[i + 1..].iter().position(|&c| c == b'\'').filter(|&p| {
                                (1..=4).contains(&p)
                                    && std::str::from_utf8(&line[i + 1..i + 1 + p])
                                        .is_ok_and(|s| s.chars().count() == 1)
                            });
                            len.map(|p| i + 2 + p)
                        };
                        i = close.unwrap_or(i + 1);
                        continue;
                    }
                    let backtick = matches!(self.grammar, Grammar::Go) || self.grammar.is_js();
                    if b == b'"' || (b == b'`' && backtick) || (b == b'\'' && !rust) {
                        self.state = Lex::Str(b);
                    }
                    i += 1;
                }
                Lex::Block(depth) => {
                    let Some(p) = memchr::memchr2(b'*', b'/', &line[i..]) else {
                        break;
                    };
                    i += p;
                    if line[i..].starts_with(b"*/") {
                        self.state = if depth > 1 {
                            Lex::Block(depth - 1)
                        } else {
                            Lex::Code
                        };
                        i += 2;
                    } else if rust && line[i..].starts_with(b"/*") {
                        self.state = Lex::Block(depth + 1);
                        i += 2;
                    } else {
                        i += 1;
                    }
                }
                Lex::Str(quote) => {
                    let Some(p) = memchr::memchr3(quote, b'\\', b'\n', &line[i..]) else {
                        break;
                    };
                    i += p;
                    let b = line[i];
                    if b == b'\\' && !(quote == b'`' && self.grammar == Grammar::Go) {
                        i += 2;
                        continue;
                    }
                    if b == quote {
                        self.state = Lex::Code;
                    } else if b == b'\n' && quote != b'`' && !rust {
                        // Only Rust strings and raw strings go on past a line end.
                        self.state = Lex::Code;
                    }
                    i += 1;
                }
                Lex::Raw(hashes) => {
                    let Some(p) = memchr::memchr(b'"', &line[i..]) else {
                        break;
                    };
                    i += p;
                    if line[i + 1..]
                        .iter()
                        .take(hashes)
                        .filter(|&&c| c == b'#')
                        .count()
                        == hashes
                        && line.len() > i + hashes
                    {
                        self.state = Lex::Code;
                        i += 1 + hashes;
                    } else {
                        i += 1;
                    }
                }
                Lex::Triple(quote) => {
                    let Some(p) = memchr::memchr2(quote, b'\\', &line[i..]) else {
                        break;
                    };
                    i += p;
                    if line[i] == b'\\' {
                        i += 2;
                        continue;
                    }
                    if line[i..].starts_with(&[quote, quote, quote]) {
                        self.state = Lex::Code;
                        i += 3;
                    } else {
                        i += 1;
                    }
                }
            }
        }
    }
}

/// Whether a Rust raw string's `r` that follows `before` starts a literal: it is a word of
/// its own, or the `r` of `br`.
pub(super) fn raw_prefix(before: &[u8]) -> bool {
    let word = |c: &u8| c.is_ascii_alphanumeric() || *c == b'_';
    match before {
        [.., p, b'b'] => !word(p),
        [b'b'] => true,
        [.., p] => !word(p),
        [] => true,
    }
}
