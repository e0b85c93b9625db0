//! The settings documentation, generated from the [`Setting`] declarations: Markdown tables, written between
//! marker comments (`<!-- settings:NAME:begin -->` … `<!-- settings:NAME:end -->`) of a hand-written page,
//! and a check that the committed page is what the declarations give (`RSM_BLESS=1` rewrites it instead).

use super::setting::Setting;
use std::path::Path;

/// A column of a generated table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Column {
    /// The key (or keys).
    Key,
    /// The type.
    Type,
    /// The default.
    Default,
    /// The allowed values and further checks.
    Validation,
    /// What the setting does, with its range when there is no validation column.
    Meaning,
    /// The note, headed with this title.
    Note(&'static str),
}

impl Column {
    fn title(&self) -> &'static str {
        match self {
            Column::Key => "key",
            Column::Type => "type",
            Column::Default => "default",
            Column::Validation => "validation",
            Column::Meaning => "meaning",
            Column::Note(title) => title,
        }
    }
}

/// A Markdown table of `settings` with these columns, one row a setting, ending in a newline.
pub fn table(settings: &[&Setting], columns: &[Column]) -> String {
    let mut out = String::new();
    let row = |cells: Vec<String>| format!("| {} |\n", cells.join(" | "));
    out.push_str(&row(columns.iter().map(|c| c.title().to_string()).collect()));
    out.push_str(&format!("|{}\n", "---|".repeat(columns.len())));
    let has_validation = columns.contains(&Column::Validation);
    for s in settings {
        let cells = columns
            .iter()
            .map(|c| match c {
                Column::Key => s.shown_key(),
                Column::Type => s.kind.name(),
                Column::Default => s.shown_default(),
                Column::Validation => s.shown_validation(),
                Column::Meaning if has_validation => s.doc.to_string(),
                Column::Meaning => meaning_with_validation(s),
                Column::Note(_) => s.note.to_string(),
            })
            .collect();
        out.push_str(&row(cells));
    }
    out
}

/// The meaning, then the range and checks in parentheses (for tables without a validation column).
fn meaning_with_validation(s: &Setting) -> String {
    let validation = match s.kind {
        super::Kind::Bool => s.checks.to_string(),
        _ => s.shown_validation(),
    };
    match (s.doc.is_empty(), validation.is_empty()) {
        (_, true) => s.doc.to_string(),
        (true, false) => validation,
        (false, false) => format!("{} ({validation})", s.doc),
    }
}

/// `page` with the text between `<!-- settings:NAME:begin -->` and `<!-- settings:NAME:end -->` replaced by
/// `generated`; an error when the page lacks either marker.
pub fn replace_between_markers(page: &str, name: &str, generated: &str) -> Result<String, String> {
    let begin = format!("<!-- settings:{name}:begin -->");
    let end = format!("<!-- settings:{name}:end -->");
    let start = page.find(&begin).ok_or_else(|| format!("no `{begin}` marker"))? + begin.len();
    let stop = page[start..].find(&end).ok_or_else(|| format!("no `{end}` after `{begin}`"))? + start;
    Ok(format!("{}\n{generated}{}", &page[..start], &page[stop..]))
}

/// Checks that `page` (a committed file) holds `tables` (marker name, generated text) between their markers;
/// with `RSM_BLESS=1` in the environment it rewrites the page instead. The error says which file and table
/// differ, the first differing line, and how to regenerate it (`bless_command`).
pub fn check_page(page: &Path, tables: &[(&str, String)], bless_command: &str) -> Result<(), String> {
    let committed = std::fs::read_to_string(page).map_err(|e| format!("cannot read {}: {e}", page.display()))?;
    let mut want = committed.clone();
    for (name, generated) in tables {
        want = replace_between_markers(&want, name, generated).map_err(|e| format!("{}: {e}", page.display()))?;
    }
    if want == committed {
        return Ok(());
    }
    if std::env::var_os("RSM_BLESS").is_some_and(|v| v == "1") {
        return std::fs::write(page, &want).map_err(|e| format!("cannot write {}: {e}", page.display()));
    }
    let line = committed
        .lines()
        .zip(want.lines())
        .position(|(a, b)| a != b)
        .map_or_else(|| "(one is a prefix of the other)".to_string(), |i| format!("line {}", i + 1));
    Err(format!(
        "{} is stale: its settings tables differ from what the Setting declarations generate (first difference \
         at {line}). Regenerate it with\n  {bless_command}\nand commit it (edit the declarations, not the tables).",
        page.display()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Unit;

    #[test]
    fn tables_render_between_markers() {
        const A: Setting =
            Setting::long("a.ms", 1, 10_000).with_default(1000).with_unit(Unit::Millis).with_doc("waits");
        const B: Setting = Setting::bool("b", false).with_doc("turns it on").with_note("ours");
        let t = table(&[&A, &B], &[Column::Key, Column::Default, Column::Meaning, Column::Note("note")]);
        assert_eq!(
            t,
            "| key | default | meaning | note |\n|---|---|---|---|\n\
             | `a.ms` | 1 s (1000 ms) | waits ([1 ms, 10 s (10000 ms)]) |  |\n\
             | `b` | false | turns it on | ours |\n"
        );
        let page = "intro\n<!-- settings:x:begin -->\nold\n<!-- settings:x:end -->\nrest\n";
        let new = replace_between_markers(page, "x", "| new |\n").unwrap();
        assert_eq!(new, "intro\n<!-- settings:x:begin -->\n| new |\n<!-- settings:x:end -->\nrest\n");
        assert_eq!(replace_between_markers(&new, "x", "| new |\n").unwrap(), new, "idempotent");
        assert!(replace_between_markers(page, "y", "").unwrap_err().contains("settings:y:begin"));
    }
}
