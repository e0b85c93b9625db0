//! The store and the partition directory as files: the objects a store holds, read from their names alone.

use std::path::{Path, PathBuf};

/// A store object: its path, and the segment its name names (start offset, id), if any.
#[derive(Clone, Debug)]
pub(super) struct Object {
    pub(super) path: PathBuf,
    pub(super) start: Option<i64>,
    pub(super) id: Option<String>,
    pub(super) ext: String,
    pub(super) temporary: bool,
    pub(super) mtime: Option<std::time::SystemTime>,
}

pub(super) fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else { return };
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() { walk(&p, out) } else { out.push(p) }
    }
}

pub(super) fn objects(store: &Path) -> Vec<Object> {
    let mut files = Vec::new();
    walk(store, &mut files);
    files.sort();
    files
        .into_iter()
        .map(|path| {
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            let temporary = name.starts_with(".rsm-tmp-");
            // `{start:020}-{id}.{ext}`; a temporary file names its target after the prefix somewhere.
            let core = name.rsplit(".rsm-tmp-").next().unwrap_or(&name).to_string();
            let (start, id, ext) = match name.split_once('-') {
                Some((s, rest)) if !temporary && s.len() == 20 && s.bytes().all(|b| b.is_ascii_digit()) => {
                    let (id, ext) = rest.rsplit_once('.').unwrap_or((rest, ""));
                    (s.parse().ok(), Some(id.to_string()), ext.to_string())
                }
                _ => (None, None, core.rsplit_once('.').map_or(String::new(), |(_, e)| e.to_string())),
            };
            let mtime = std::fs::metadata(&path).and_then(|m| m.modified()).ok();
            Object { path, start, id, ext, temporary, mtime }
        })
        .collect()
}

pub(super) fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let p = e.path();
        if p.is_dir() {
            copy_dir(&p, &to.join(e.file_name()));
        } else {
            // A file may go while we copy (nothing runs now, but be lenient): skip it.
            let _ = std::fs::copy(&p, to.join(e.file_name()));
        }
    }
}
