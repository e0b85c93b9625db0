//! `rsm-fuzz-seeds DIR`: writes every target's seeds as `DIR/<target>/seed-<n>` (`tools/fuzz` runs it).

fn main() -> std::io::Result<()> {
    let dir = std::path::PathBuf::from(std::env::args().nth(1).unwrap_or_else(|| "fuzz/corpus".into()));
    let mut n = std::collections::HashMap::<&str, usize>::new();
    for (target, bytes) in rsm_fuzz::seeds::all() {
        let i = n.entry(target).or_default();
        std::fs::create_dir_all(dir.join(target))?;
        std::fs::write(dir.join(target).join(format!("seed-{i}")), bytes)?;
        *i += 1;
    }
    Ok(())
}
