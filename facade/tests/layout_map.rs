//! The README's layout map names every source file: each `<crate>/src/**/*.rs` file's name, and each folder on
//! its way, appear in its crate's entry of the map (a `mod.rs` by its folder alone), so a file added or moved
//! without the map following fails here.

use std::path::Path;
use std::process::Command;

/// The lines of the README's `## Layout` block.
fn layout_block(readme: &str) -> Vec<&str> {
    let start = readme.find("## Layout\n```\n").expect("the README has a `## Layout` block") + "## Layout\n```\n".len();
    let len = readme[start..].find("```").expect("the layout block ends");
    readme[start..start + len].lines().collect()
}

/// The map's entries: each folder named at the start of a line (a crate, a tool), with its text up to the next.
fn entries<'a>(block: &[&'a str]) -> Vec<(&'a str, String)> {
    let mut out: Vec<(&str, String)> = Vec::new();
    for line in block {
        if !line.starts_with(' ') {
            let name = line.split_whitespace().next().unwrap_or_default();
            out.push((name, String::new()));
        }
        if let Some((_, text)) = out.last_mut() {
            text.push_str(line);
            text.push('\n');
        }
    }
    out
}

#[test]
fn every_source_file_is_in_the_layout_map() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let block = layout_block(&readme);
    let entries = entries(&block);
    let listed = Command::new("git").arg("-C").arg(root).args(["ls-files", "*.rs"]).output().expect("git runs");
    assert!(listed.status.success(), "git ls-files failed");
    let files = String::from_utf8(listed.stdout).unwrap();
    let mut missing = Vec::new();
    let mut checked = 0;
    for file in files.lines().filter(|f| f.contains("/src/") && !f.starts_with("fuzz/libfuzzer/")) {
        let (krate, rel) = file.split_once("/src/").unwrap();
        let entry = entries.iter().filter(|(name, _)| format!("{krate}/").starts_with(name)).max_by_key(|e| e.0.len());
        let Some((_, text)) = entry else {
            missing.push(format!("{file}: no entry for {krate}/"));
            continue;
        };
        checked += 1;
        let mut parts: Vec<&str> = rel.split('/').collect();
        let name = parts.pop().unwrap();
        let mut wanted: Vec<String> = parts.iter().map(|d| format!("{d}/")).collect();
        if name != "mod.rs" {
            wanted.push(name.to_string());
        }
        for w in wanted {
            if !text.contains(&w) {
                missing.push(format!("{file}: `{w}` not in the entry of {krate}/"));
            }
        }
    }
    assert!(checked > 200, "only {checked} source files found");
    assert!(missing.is_empty(), "the README's layout map misses:\n{}", missing.join("\n"));
}
