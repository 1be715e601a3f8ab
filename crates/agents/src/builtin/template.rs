//! The builtin agent's words and tables: the files of `specs/templates/builtin/`, built into
//! the binary. Data files (`*.toml`) are parsed with [`data`] or [`list`] into plain structs;
//! templates are compiled once into the one minijinja environment of the agent, [`ENV`],
//! which every role renders through ([`render`], [`fill`]): the code decides what a document
//! or a report says (ids, lists, counts, choices) and the template says it.
//!
//! Every data file and template is parsed and compiled by a unit test, so a malformed one is
//! a bug found there; at run time they are trusted to load.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use minijinja::Environment;

use super::writer::{count, plural, text};

/// The name and the text of the file `$name` of `specs/templates/builtin/`, built into the
/// binary.
macro_rules! builtin {
    ($name:literal) => {
        (
            $name,
            include_str!(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../../specs/templates/builtin/",
                $name
            )),
        )
    };
}

/// Parses the builtin data file `name` (see [`builtin!`]).
pub(super) fn data<T: serde::de::DeserializeOwned>((name, text): (&str, &str)) -> T {
    toml::from_str(text).unwrap_or_else(|e| panic!("the builtin data file {name}: {e}"))
}

/// Parses a builtin data file holding one list of tables (`[[rule]]`, `[[language]]`, …).
pub(super) fn list<T: serde::de::DeserializeOwned>(file: (&str, &str)) -> Vec<T> {
    let lists: BTreeMap<String, Vec<T>> = data(file);
    lists.into_values().flatten().collect()
}

/// The templates, by name: the writer's documents, the analyst's and the specialist's
/// reports. The planner's sentences come from a table of their own, `planner-text.toml`,
/// each under its key.
const TEMPLATES: &[(&str, &str)] = &[
    builtin!("product-brief.md"),
    builtin!("revision-notes.md"),
    builtin!("adr.md"),
    builtin!("architecture-index.md"),
    builtin!("requirement.md"),
    builtin!("nfr.md"),
    builtin!("requirements-index.md"),
    builtin!("epics-index.md"),
    builtin!("epic.md"),
    builtin!("common-questions.md"),
    builtin!("analyst-report.txt"),
    builtin!("specialist-report.md"),
];

/// The environment holding every template of the builtin agent and the filters they use, or
/// why one does not compile (or two share a name). A value a template asks for and the data
/// lacks is an error: either means the template and the code disagree.
pub(super) static ENV: LazyLock<Result<Environment<'static>, String>> = LazyLock::new(|| {
    let sentences: BTreeMap<String, String> = data(builtin!("planner-text.toml"));
    let named = TEMPLATES
        .iter()
        .map(|(n, s)| ((*n).to_owned(), (*s).to_owned()));
    environment(named.chain(sentences))
});

/// An empty environment for templates of plain text (no escaping; a value the data lacks is
/// an error; a block tag takes its line with it), keeping a template's last new line when
/// `keep_trailing_newline`: the syntax of every template the tool renders for agents.
pub(crate) fn text_environment(keep_trailing_newline: bool) -> Environment<'static> {
    let mut env = Environment::new();
    env.set_auto_escape_callback(|_| minijinja::AutoEscape::None);
    env.set_undefined_behavior(minijinja::UndefinedBehavior::Strict);
    env.set_syntax(
        minijinja::syntax::SyntaxConfig::builder()
            .trim_blocks(true)
            .lstrip_blocks(true)
            .keep_trailing_newline(keep_trailing_newline)
            .build()
            .expect("the default delimiters are valid"),
    );
    env
}

/// The environment of `templates` (name, source), with the syntax and filters of the agent.
fn environment(
    templates: impl IntoIterator<Item = (String, String)>,
) -> Result<Environment<'static>, String> {
    let mut env = text_environment(false);
    for (name, source) in templates {
        if env.get_template(&name).is_ok() {
            return Err(format!("two builtin templates are named `{name}`"));
        }
        env.add_template_owned(name.clone(), source)
            .map_err(|e| format!("the template `{name}` does not compile: {e:#}"))?;
    }
    filters(&mut env);
    Ok(env)
}

/// The filters and tests the templates use.
fn filters(env: &mut Environment<'static>) {
    env.add_filter("and_list", |items: Vec<String>| text::and_list(&items));
    env.add_filter("series", |items: Vec<String>| text::series(&items));
    env.add_filter("lower_first", |t: String| text::lower_first(&t));
    env.add_filter("upper_first", |t: String| text::upper_first(&t));
    env.add_filter("article", |t: String| text::article(&t));
    env.add_filter("cell", |t: String| text::cell(&t));
    env.add_filter("mermaid_label", |t: String| text::mermaid_label(&t));
    env.add_filter("shorten", |t: String, max: usize| text::shorten(&t, max));
    // An inline YAML list, `[a, b]`: its items are ids and paths, which need no quoting.
    env.add_filter("yaml_list", |items: Vec<String>| {
        format!("[{}]", items.join(", "))
    });
    // `n` and `thing`, plural unless `n` is 1: `1 file`, `3 files`, `2 stories`.
    env.add_filter("count", |n: usize, thing: String| count(n, &thing));
    env.add_filter("plural", |t: String| plural(&t));
    env.add_filter("code", |t: String| format!("`{t}`"));
    env.add_filter("quoted", |items: Vec<String>| {
        items.iter().map(|i| format!("\"{i}\"")).collect::<Vec<_>>()
    });
    env.add_filter("backticked", |items: Vec<String>| {
        items.iter().map(|i| format!("`{i}`")).collect::<Vec<_>>()
    });
    env.add_filter("whole", |n: f64| format!("{n:.0}"));
    // Whole percent, as Rust rounds it.
    env.add_filter("percent", |share: f64| {
        format!("{}", (share * 100.0).round())
    });
    env.add_filter("trim_end", |t: String, chars: String| {
        t.trim_end_matches(|c| chars.contains(c)).to_owned()
    });
    env.add_filter("inline", |t: String| tlv4_specdoc::md::inline(&t));
    env.add_filter("node", |id: String| id.replace('-', ""));
    env.add_test("has", |items: Vec<String>, item: String| {
        items.contains(&item)
    });
    env.add_test("manifest", |path: String| {
        super::analyst::manifest::kind_of(&path).is_some()
    });
}

/// Renders template `name` over `data`, as it comes. The templates are compiled and rendered
/// over the data they are written for by unit tests, so this does not fail.
pub(super) fn render(name: &str, data: impl serde::Serialize) -> String {
    ENV.as_ref()
        .map_err(Clone::clone)
        .and_then(|env| {
            env.get_template(name)
                .and_then(|t| t.render(minijinja::value::Serde(data)))
                .map_err(|e| format!("{e:#}"))
        })
        .unwrap_or_else(|e| panic!("the builtin template {name}: {e}"))
}

/// Renders template `name` over `data`, then folds runs of blank lines into one and ends the
/// text with exactly one newline, so that a document's template may leave blank lines where
/// an optional part is empty.
pub(super) fn fill(name: &str, data: &impl serde::Serialize) -> Result<String, String> {
    let env = ENV.as_ref().map_err(Clone::clone)?;
    env.get_template(name)
        .and_then(|t| t.render(minijinja::value::Serde(data)))
        .map(|text| tidy(&text))
        .map_err(|e| format!("cannot render the template `{name}`: {e:#}"))
}

/// Like [`fill`], and also returns the text the template set as `var`: what a document says
/// that another one quotes.
pub(super) fn fill_and_read(
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

#[cfg(test)]
mod tests {
    #[test]
    fn every_template_compiles_once() {
        if let Err(e) = &*super::ENV {
            panic!("{e}");
        }
    }

    #[test]
    fn two_templates_with_one_name_are_an_error() {
        let twice = [("a", "x"), ("a", "y")].map(|(n, s)| (n.to_owned(), s.to_owned()));
        let err = super::environment(twice).expect_err("refused");
        assert!(err.contains("two builtin templates are named `a`"), "{err}");
        assert!(super::environment([("a".to_owned(), "{{".to_owned())]).is_err());
    }

    #[test]
    fn tidy_folds_blank_lines_and_trailing_space() {
        assert_eq!(
            super::tidy("# T\n\n\n## Fixed  \n\nX\n\n"),
            "# T\n\n## Fixed\n\nX\n"
        );
    }
}
