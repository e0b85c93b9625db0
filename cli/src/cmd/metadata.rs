//! `rsm metadata`: every record of a cluster's remote log metadata topic, one line each.

use super::audit;
use crate::exit::CmdResult;
use crate::output::{Out, out};
use rsm_core::Error;

/// Prints the records of `metadata_topic`; fails when some do not decode.
pub fn run(o: &mut Out, bootstrap_server: &str, metadata_topic: &str) -> CmdResult {
    let records = audit::kafka_records(bootstrap_server, metadata_topic)?;
    for r in &records {
        out!(o, "{}", audit::describe(r));
    }
    match records.iter().filter(|r| r.record.is_err()).count() {
        0 => Ok(()),
        n => Err(Error::corrupt(format!("{n} records of {metadata_topic} do not decode (listed above)")).into()),
    }
}
