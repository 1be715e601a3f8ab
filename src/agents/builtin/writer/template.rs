//! The templates: the writer's own, which hold the text of every document it writes, and the
//! spec templates, which say what a document must contain.
//!
//! The writer's templates (`specs/templates/builtin/`) are minijinja templates rendered over
//! plain data: the code decides what a document says (ids, lists, counts, choices) and the
//! template says it. The spec templates (`specs/templates/*.md`, parts marked
//! `<!-- part: NAME -->`) are the contract that agents and the readiness gate read too; the
//! writer checks its output against the headings they require.

use std::sync::LazyLock;

use minijinja::Environment;

use super::text;
use crate::specdoc::md::WRITER;

/// `(name, text)` of each named template of `specs/templates/builtin/`.
macro_rules! builtin {
    ($($name:literal),* $(,)?) => {
        &[$(($name, include_str!(concat!("../../../../specs/templates/builtin/", $name)))),*]
    };
}

/// The writer's templates, by name.
const TEMPLATES: &[(&str, &str)] = builtin![
    "product-brief.md",
    "revision-notes.md",
    "adr.md",
    "architecture-index.md",
    "requirement.md",
    "nfr.md",
    "requirements-index.md",
    "epics-index.md",
    "epic.md",
    "common-questions.md",
];

/// The environment holding [`TEMPLATES`] and the filters they use, or why a template does
/// not compile. A value a template asks for and the data lacks is an error: either means
/// template and writer disagree.
static ENV: LazyLock<Result<Environment<'static>, String>> = LazyLock::new(|| {
    let mut env = Environment::new();
    env.set_auto_escape_callback(|_| minijinja::AutoEscape::None);
    env.set_undefined_behavior(minijinja::UndefinedBehavior::Strict);
    env.set_syntax(
        minijinja::syntax::SyntaxConfig::builder()
            .trim_blocks(true)
            .lstrip_blocks(true)
            .build()
            .expect("the default delimiters are valid"),
    );
    for (name, source) in TEMPLATES {
        env.add_template(name, source)
            .map_err(|e| format!("the template `{name}` does not compile: {e:#}"))?;
    }
    env.add_filter("and_list", |items: Vec<String>| text::and_list(&items));
    env.add_filter("series", |items: Vec<String>| text::series(&items));
    env.add_filter("lower_first", |t: String| text::lower_first(&t));
    env.add_filter("upper_first", |t: String| text::upper_first(&t));
    env.add_filter("article", |t: String| text::article(&t));
    env.add_filter("cell", |t: String| text::cell(&t));
    env.add_filter("mermaid_label", |t: String| text::mermaid_label(&t));
    env.add_filter("shorten", |t: String, max: usize| text::shorten(&t, max));
    env.add_filter("yaml_list", |items: Vec<String>| text::yaml_list(&items));
    env.add_filter("count", |n: usize, thing: String| {
        super::brief::count(n, &thing)
    });
    env.add_filter("quoted", |items: Vec<String>| {
        items.iter().map(|i| format!("\"{i}\"")).collect::<Vec<_>>()
    });
    env.add_filter("backticked", |items: Vec<String>| {
        items.iter().map(|i| format!("`{i}`")).collect::<Vec<_>>()
    });
    env.add_filter("whole", |n: f64| format!("{n:.0}"));
    env.add_filter("trim_end", |t: String, chars: String| {
        t.trim_end_matches(|c| chars.contains(c)).to_owned()
    });
    env.add_filter("plural", |t: String| super::brief::plural(&t));
    env.add_filter("inline", |t: String| crate::specdoc::md::inline(&t));
    env.add_filter("node", |id: String| id.replace('-', ""));
    Ok(env)
});

/// Renders the writer's template `name` over `data`, then folds runs of blank lines into one
/// and ends the text with exactly one newline, so that templates may leave blank lines where
/// an optional part is empty.
pub fn fill(name: &str, data: &impl serde::Serialize) -> Result<String, String> {
    let env = ENV.as_ref().map_err(Clone::clone)?;
    env.get_template(name)
        .and_then(|t| t.render(minijinja::value::Serde(data)))
        .map(|text| tidy(&text))
        .map_err(|e| format!("cannot render the template `{name}`: {e:#}"))
}

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

/// Like [`fill`], and also returns the text the template set as `var`: what a document says
/// that another one quotes.
pub fn fill_and_read(
    name: &str,
    data: &impl serde::Serialize,
    var: &str,
) -> Result<(String, String), String> {
    let env = ENV.as_ref().map_err(Clone::clone)?;
    let captured = env
        .get_template(name)
        .and_then(|t| t.render_captured(minijinja::value::Serde(data)))
        .map_err(|e| format!("cannot render the template `{name}`: {e:#}"))?;
    let value = captured
        .state()
        .lookup(var)
        .filter(|v| !v.is_undefined())
        .ok_or_else(|| format!("the template `{name}` sets no `{var}`"))?;
    Ok((tidy(captured.output()), value.to_string()))
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
    fn the_writers_templates_compile() {
        if let Err(e) = &*ENV {
            panic!("{e}");
        }
        let none = serde_json::json!({"feedback": []});
        assert_eq!(fill("revision-notes.md", &none).unwrap(), "");
        // A value the template needs and the data lacks is an error.
        assert!(fill("revision-notes.md", &serde_json::json!({"feedback": ["a"]})).is_err());
        let notes = serde_json::json!({"task_id": "DRAFT-001-R1", "feedback": ["a", "b"]});
        let text = fill("revision-notes.md", &notes).unwrap();
        assert!(text.starts_with("## Revision Notes\n\nThis version was written by DRAFT-001-R1"));
        assert!(text.contains("\n> a\n>\n> b\n\n"));
        // Values are inserted verbatim and never rendered again.
        let braces = serde_json::json!({"task_id": "T", "feedback": ["{{ z }}"]});
        assert!(
            fill("revision-notes.md", &braces)
                .unwrap()
                .contains("\n> {{ z }}\n")
        );
    }

    #[test]
    fn parts_and_placeholders() {
        let template = "<!-- header `part: x` -->\n<!-- part: a -->\n# {{t}}\n\n## Fixed\n\n{{x}}\n\n\n{{y}}\n<!-- part: b -->\nB {{t}}\n";
        let a = part(template, "a").unwrap();
        assert_eq!(a, "# {{t}}\n\n## Fixed\n\n{{x}}\n\n\n{{y}}\n");
        assert_eq!(part(template, "b").unwrap(), "B {{t}}\n");
        assert!(part(template, "c").is_err());
        assert_eq!(
            tidy("# T\n\n\n## Fixed  \n\nX\n\n"),
            "# T\n\n## Fixed\n\nX\n"
        );
        assert_eq!(required_headings(a), vec![(2, "Fixed".to_owned())]);
    }
}
