//! `rsm sweep`: what interrupted uploads left in the store, without any metadata, listed or deleted.

use crate::exit::CmdResult;
use crate::output::{Out, human, out};
use crate::settings::StoreArgs;
use std::time::Duration;

/// Lists the objects of never-committed segments and the temporary upload files last written at least
/// `min_age` ago; deletes them with `yes`.
pub fn run(o: &mut Out, store: &StoreArgs, min_age: Duration, yes: bool) -> CmdResult {
    let store = store.open()?;
    let found = store.orphans(None, min_age)?;
    let verb = if yes { "DELETE" } else { "WOULD DELETE" };
    for (key, bytes) in &found.uncommitted {
        out!(o, "{verb}\t{key}\t{bytes} bytes\tan object of a segment with no manifest (never committed)");
    }
    for (key, bytes) in &found.temporary {
        out!(o, "{verb}\t{key}\t{bytes} bytes\ta temporary file of an interrupted upload");
    }
    let n = found.uncommitted.len() + found.temporary.len();
    if !yes {
        out!(
            o,
            "{n} leftovers ({}) older than the safety age; add --yes to delete them (nothing was deleted)",
            human(found.bytes())
        );
        return Ok(());
    }
    store.delete_objects(&found.keys())?;
    out!(o, "deleted {n} leftovers ({})", human(found.bytes()));
    Ok(())
}
