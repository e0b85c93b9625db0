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

/// Whether `path` (a file, or a folder ending in `/`) names something in the tree: from the root, or inside
/// one of the crates `crates` (a row of `docs/requirements.md` names a crate once, then paths inside it).
fn names_something(root: &Path, crates: &[String], path: &str) -> bool {
    std::iter::once(root.join(path))
        .chain(crates.iter().flat_map(|c| [root.join(c).join(path), root.join(c).join("src").join(path)]))
        .any(|p| p.exists())
}

#[test]
fn every_path_in_the_requirements_map_exists() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let map = std::fs::read_to_string(root.join("docs/requirements.md")).unwrap();
    let listed = Command::new("git").arg("-C").arg(root).args(["ls-files", "*Cargo.toml"]).output().expect("git runs");
    let crates: Vec<String> = String::from_utf8(listed.stdout)
        .unwrap()
        .lines()
        .filter_map(|l| l.strip_suffix("/Cargo.toml").map(str::to_string))
        .collect();
    let source = |p: &str| {
        let ext = p.rsplit_once('.').map(|(_, e)| e);
        p.ends_with('/') || matches!(ext, Some("rs" | "java" | "py" | "sh" | "md" | "h" | "toml" | "c" | "cpp"))
    };
    let mut checked = 0;
    let mut missing = Vec::new();
    for (i, quoted) in map.split('`').enumerate() {
        // Odd pieces are between backticks; a path has a `/`, no space, and no placeholder.
        let placeholder = quoted.contains(['<', '{', '*', ':', ' ']) || quoted.starts_with("..");
        if i % 2 == 0 || !quoted.contains('/') || placeholder || !source(quoted) {
            continue;
        }
        checked += 1;
        if !names_something(root, &crates, quoted) {
            missing.push(quoted.to_string());
        }
    }
    assert!(checked > 100, "only {checked} paths found in docs/requirements.md");
    assert!(missing.is_empty(), "docs/requirements.md names paths that are not in the tree: {missing:?}");
}
