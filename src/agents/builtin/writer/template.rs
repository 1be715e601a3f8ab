//! The template files: parts marked `<!-- part: NAME -->`, `{{name}}` placeholders, and the
//! list of headings a part requires.

use crate::specdoc::md::WRITER;

/// The text of part `name` of `template`, without its marker line.
pub fn part<'t>(template: &'t str, name: &str) -> Result<&'t str, String> {
    let marker = format!("<!-- part: {name} -->\n");
    let start = line_start_find(template, &marker)
        .ok_or_else(|| format!("the template has no part `{name}`"))?
        + marker.len();
    let rest = &template[start..];
    let end = line_start_find(rest, "<!-- part: ").unwrap_or(rest.len());
    Ok(&rest[..end])
}

/// The first position of `needle` at the start of a line.
fn line_start_find(hay: &str, needle: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(at) = hay[from..].find(needle) {
        let at = from + at;
        if at == 0 || hay.as_bytes()[at - 1] == b'\n' {
            return Some(at);
        }
        from = at + needle.len();
    }
    None
}

/// Fills the `{{name}}` placeholders of `part` with `values`. A placeholder without a value,
/// or a value that no placeholder asks for, is an error: either means template and writer
/// disagree. Values are inserted verbatim and never scanned again. Runs of blank lines left
/// by empty values are folded into one, and the result ends with exactly one newline.
pub fn render(part: &str, values: &[(&str, String)]) -> Result<String, String> {
    let mut out = String::with_capacity(part.len() * 2);
    let mut used = vec![false; values.len()];
    let mut rest = part;
    while let Some(open) = rest.find("{{") {
        out.push_str(&rest[..open]);
        let after = &rest[open + 2..];
        let close = after
            .find("}}")
            .ok_or_else(|| "the template has an unclosed `{{`".to_owned())?;
        let key = after[..close].trim();
        let index = values
            .iter()
            .position(|(k, _)| *k == key)
            .ok_or_else(|| format!("the template asks for `{{{{{key}}}}}`, which has no value"))?;
        used[index] = true;
        out.push_str(&values[index].1);
        rest = &after[close + 2..];
    }
    out.push_str(rest);
    if let Some(unused) = used.iter().position(|u| !u) {
        return Err(format!(
            "the value `{}` is not used by the template",
            values[unused].0
        ));
    }
    Ok(tidy(&out))
}

/// Folds runs of blank lines into one and ends the text with one newline.
fn tidy(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut blank = 0;
    for line in text.lines() {
        let line = line.trim_end();
        if line.is_empty() {
            blank += 1;
            if blank > 1 {
                continue;
            }
        } else {
            blank = 0;
        }
        out.push_str(line);
        out.push('\n');
    }
    while out.ends_with("\n\n") {
        out.pop();
    }
    out
}

/// The headings a part writes out literally (those holding no placeholder), in order, as
/// `(level, text)`. The frontmatter and placeholder headings are not counted.
pub fn required_headings(part: &str) -> Vec<(usize, String)> {
    WRITER
        .headings(part)
        .into_iter()
        .filter(|h| !h.text.contains("{{"))
        .map(|h| (h.level, h.text))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_and_placeholders() {
        let template = "<!-- header `part: x` -->\n<!-- part: a -->\n# {{t}}\n\n## Fixed\n\n{{x}}\n\n\n{{y}}\n<!-- part: b -->\nB {{t}}\n";
        let a = part(template, "a").unwrap();
        assert_eq!(a, "# {{t}}\n\n## Fixed\n\n{{x}}\n\n\n{{y}}\n");
        assert_eq!(part(template, "b").unwrap(), "B {{t}}\n");
        assert!(part(template, "c").is_err());
        let out = render(
            a,
            &[("t", "T {{z}}".into()), ("x", "X".into()), ("y", "".into())],
        )
        .unwrap();
        assert_eq!(out, "# T {{z}}\n\n## Fixed\n\nX\n");
        assert!(render(a, &[("t", String::new())]).is_err());
        assert!(render("{{t}}", &[("t", String::new()), ("unused", String::new())]).is_err());
        assert_eq!(required_headings(a), vec![(2, "Fixed".to_owned())]);
    }
}
