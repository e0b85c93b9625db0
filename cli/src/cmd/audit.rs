//! `rsm audit`: its arguments, and the audit's report printed as a table and a line per finding, or as one
//! JSON document; the exit status says whether data was lost. The rules that decide each finding are
//! [`rsm_facade::audit`]'s; the metadata is read here, from a local metadata log or a cluster's metadata
//! topic.

use super::metadata::topic_reader_config;
use crate::exit::{CmdResult, Failure};
use crate::output::{Out, epoch_ms, out, upload_fields, utc};
use crate::settings::StoreArgs;
use clap::Args;
use rsm_core::Error;
use rsm_facade::audit::{AuditOptions, Report, audit};
use rsm_metadata::events::segment_state_name;
use rsm_metadata::kafka::read_segments;
use rsm_metadata::local::LocalMetadataManager;
use std::path::PathBuf;
use std::time::{Duration, SystemTime};

/// The arguments of `rsm audit`.
#[derive(Args)]
pub struct AuditArgs {
    /// A Kafka broker to read the metadata topic from (HOST:PORT).
    #[arg(long, required_unless_present = "metadata_dir")]
    pub bootstrap_server: Option<String>,
    /// The metadata topic.
    #[arg(long, default_value = "__remote_log_metadata")]
    pub metadata_topic: String,
    /// A local metadata log (the embedded default) instead of a cluster.
    #[arg(long, conflicts_with = "bootstrap_server")]
    pub metadata_dir: Option<PathBuf>,
    /// The store and its settings.
    #[command(flatten)]
    pub store: StoreArgs,
    /// Only this topic.
    #[arg(long)]
    pub topic: Option<String>,
    /// Check that objects are there and manifests read, without reading the data.
    #[arg(long)]
    pub quick: bool,
    /// Safety age: younger objects are never deleted, younger uploads never aborted, and younger copies
    /// or deletes are not stuck (0s, 90s, 10m, 1h, 7d).
    #[arg(long, default_value = "1h", value_parser = parse_age)]
    pub min_age: Duration,
    /// Delete the orphans older than the safety age, and abort the incomplete multipart uploads to
    /// segments' keys last written before it (needs --yes).
    #[arg(long)]
    pub delete_orphans: bool,
    /// Confirms --delete-orphans.
    #[arg(long, requires = "delete_orphans")]
    pub yes: bool,
    /// One JSON document instead of the table.
    #[arg(long)]
    pub json: bool,
}

/// Parses an age: a number with `s`, `m`, `h` or `d` (`0s`, `90s`, `10m`, `1h`, `7d`).
pub fn parse_age(s: &str) -> std::result::Result<Duration, String> {
    let (n, unit) = s.split_at(s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len()));
    let n: u64 = n.parse().map_err(|_| format!("`{s}` is not an age such as 0s, 90s, 10m, 1h or 7d"))?;
    let secs = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        _ => return Err(format!("`{s}`: the unit must be s, m, h or d")),
    };
    n.checked_mul(secs).map(Duration::from_secs).ok_or_else(|| format!("`{s}` is too long"))
}

/// The report as one JSON document.
pub fn to_json(report: &Report) -> serde_json::Value {
    let partitions: Vec<_> = report
        .partitions
        .iter()
        .map(|((tp, topic_id), p)| {
            serde_json::json!({
                "partition": tp,
                "topic_id": topic_id,
                "copied": p.copied,
                "lost": p.lost.iter().map(|l| serde_json::json!({
                    "segment_id": l.segment_id, "start_offset": l.start_offset, "problem": l.problem}))
                    .collect::<Vec<_>>(),
                "unverified": p.unverified.iter().map(|u| serde_json::json!({
                    "segment_id": u.segment_id, "start_offset": u.start_offset, "problem": u.problem,
                    "key_id": u.key_id})).collect::<Vec<_>>(),
                "gaps": p.gaps.iter().map(|g| serde_json::json!({
                    "first_offset": g.first_offset, "last_offset": g.last_offset})).collect::<Vec<_>>(),
                "unreferenced": p.unreferenced.iter().map(|u| serde_json::json!({
                    "segment_id": u.segment_id, "start_offset": u.start_offset, "bytes": u.bytes}))
                    .collect::<Vec<_>>(),
                "damaged": p.damaged.iter().map(|d| serde_json::json!({
                    "segment_id": d.segment_id, "start_offset": d.start_offset, "bytes": d.bytes,
                    "problem": d.problem, "keys": d.keys})).collect::<Vec<_>>(),
                "orphans": p.orphans.iter().map(|x| serde_json::json!({
                    "key": x.key, "bytes": x.bytes, "older_than_min_age": x.older_than_min_age}))
                    .collect::<Vec<_>>(),
                "stuck": p.stuck.iter().map(|x| serde_json::json!({
                    "segment_id": x.segment_id, "state": segment_state_name(x.state), "since_ms": x.since_ms}))
                    .collect::<Vec<_>>(),
                "abandoned": p.abandoned.iter().map(|a| serde_json::json!({
                    "segment_id": a.segment_id, "start_offset": a.start_offset, "since_ms": a.since_ms}))
                    .collect::<Vec<_>>(),
            })
        })
        .collect();
    let now = SystemTime::now();
    let uploads: Vec<_> = report
        .uploads
        .iter()
        .map(|f| {
            let u = &f.upload;
            serde_json::json!({
                "key": u.key,
                "upload_id": u.upload_id,
                "partition": f.partition,
                "bytes": u.bytes,
                "parts": u.parts,
                "initiated_ms": (u.initiated.is_some()).then(|| epoch_ms(u.initiated)),
                "last_written_ms": (u.last_written().is_some()).then(|| epoch_ms(u.last_written())),
                "age_s": u.last_written().map(|t| now.duration_since(t).unwrap_or_default().as_secs()),
                "older_than_min_age": f.old,
            })
        })
        .collect();
    serde_json::json!({
        "partitions": partitions,
        "totals": {
            "copied": report.partitions.values().map(|p| p.copied).sum::<usize>(),
            "lost": report.lost(),
            "orphans": report.partitions.values().map(|p| p.orphans.len()).sum::<usize>(),
            "orphan_bytes": report.orphan_bytes(),
            "stuck": report.partitions.values().map(|p| p.stuck.len()).sum::<usize>(),
            "abandoned": report.count(|p| p.abandoned.len()),
            "unverified": report.count(|p| p.unverified.len()),
            "gaps": report.count(|p| p.gaps.len()),
            "unreferenced": report.count(|p| p.unreferenced.len()),
            "damaged": report.count(|p| p.damaged.len()),
            "damaged_bytes": report.damaged_bytes(),
            "left_alone": report.left_alone.len(),
            "incomplete_uploads": report.uploads.len(),
            "incomplete_upload_bytes": report.upload_bytes(),
        },
        "left_alone": report.left_alone.iter().map(|l| serde_json::json!({"key": l.key, "bytes": l.bytes}))
            .collect::<Vec<_>>(),
        "deleted": report.deleted,
        "keys": report.keys.iter().map(|(id, t)| serde_json::json!({
            "key_id": id, "opened": t.opened, "refused": t.refused, "probably_wrong": t.probably_wrong()}))
            .collect::<Vec<_>>(),
        "incomplete_uploads": uploads,
        "aborted_uploads": report.aborted.iter().map(|a| serde_json::json!({"key": a.key, "upload_id": a.upload_id}))
            .collect::<Vec<_>>(),
    })
}

/// The exit status `rsm audit` gives a run that found no loss but segments it could not check (a missing
/// key or setting): apart from 1, data lost or a gap.
pub const EXIT_UNVERIFIED: u8 = 3;

/// Errors for a run that found data loss, a gap or a damaged segment no finished copy references (exit 1),
/// or segments it could not check (exit [`EXIT_UNVERIFIED`]).
pub fn outcome(report: &Report) -> CmdResult {
    let (lost, gaps, unverified) =
        (report.lost(), report.count(|p| p.gaps.len()), report.count(|p| p.unverified.len()));
    let damaged = report.count(|p| p.damaged.len());
    if lost > 0 || gaps > 0 {
        let also = match damaged {
            0 => String::new(),
            n => format!("; {n} committed segments no metadata references are damaged, kept"),
        };
        return Err(Error::corrupt(format!(
            "{lost} copied segments are missing or damaged in the store, and {gaps} gaps in remote logs{also} (listed \
             above)"
        ))
        .into());
    }
    if damaged > 0 {
        return Err(Error::corrupt(format!(
            "{damaged} committed segments no metadata references are damaged (their manifest is in the store, so \
             they were committed; listed above): kept, never deleted as orphans"
        ))
        .into());
    }
    match unverified {
        0 => Ok(()),
        // The message says the status too (`(exit code 3)`), as it always has.
        n => Err(Failure::with_status(
            Error::config(
                "encryption.keys",
                format!(
                    "{n} copied segments could not be checked for want of a key or setting, or with a key that does \
                     not open them (listed above): not data loss"
                ),
            )
            .with_field("exit code", EXIT_UNVERIFIED),
            EXIT_UNVERIFIED,
        )),
    }
}

/// `rsm audit`: the metadata read from the local log `--metadata-dir` or the cluster `--bootstrap-server`,
/// compared with the store; prints the report.
pub fn run(o: &mut Out, args: AuditArgs) -> CmdResult {
    if args.delete_orphans && !args.yes {
        return Err(Error::invalid(
            "--delete-orphans deletes objects from the store: add --yes to confirm (nothing was deleted)",
        )
        .into());
    }
    let segments = match (&args.metadata_dir, &args.bootstrap_server) {
        (Some(dir), _) => LocalMetadataManager::open_existing_read_only(dir)?.all_segments()?,
        (None, Some(bootstrap)) => {
            rsm_facade::runtime().block_on(read_segments(&topic_reader_config(bootstrap, &args.metadata_topic)))?
        }
        (None, None) => unreachable!("clap requires one"),
    };
    let opts = AuditOptions {
        topic: args.topic,
        quick: args.quick,
        min_age: args.min_age,
        delete_orphans: args.delete_orphans,
    };
    print_report(o, &audit(&args.store.open()?, &segments, &opts)?, args.json)
}

/// Prints `report` as a table and lines per finding, or (`json`) one JSON document, and ends as
/// [`outcome`] says.
fn print_report(o: &mut Out, report: &Report, json: bool) -> CmdResult {
    if json {
        out!(o, "{}", serde_json::to_string_pretty(&to_json(report)).expect("JSON of plain values"));
        return outcome(report);
    }
    out!(o, "PARTITION\tTOPIC ID\tCOPIED\tLOST\tORPHANS\tORPHAN BYTES\tSTUCK\tGAPS\tUNVERIFIED\tUNREFERENCED\tDAMAGED");
    for ((tp, topic_id), p) in &report.partitions {
        let bytes: u64 = p.orphans.iter().map(|x| x.bytes).sum();
        out!(
            o,
            "{tp}\t{topic_id}\t{}\t{}\t{}\t{bytes}\t{}\t{}\t{}\t{}\t{}",
            p.copied,
            p.lost.len(),
            p.orphans.len(),
            p.stuck.len(),
            p.gaps.len(),
            p.unverified.len(),
            p.unreferenced.len(),
            p.damaged.len()
        );
    }
    for ((tp, _), p) in &report.partitions {
        for l in &p.lost {
            out!(o, "LOST\t{tp}\t{}\toffset {}\t{}", l.segment_id, l.start_offset, l.problem);
        }
        for g in &p.gaps {
            out!(o, "GAP\t{tp}\toffsets {}..={}\tno copied segment holds them", g.first_offset, g.last_offset);
        }
        for u in &p.unverified {
            out!(o, "UNVERIFIED\t{tp}\t{}\toffset {}\tcannot be checked: {}", u.segment_id, u.start_offset, u.problem);
        }
        for u in &p.unreferenced {
            let (id, start, bytes) = (&u.segment_id, u.start_offset, u.bytes);
            out!(o, "UNREFERENCED\t{tp}\t{id}\toffset {start}\t{bytes} bytes\ta whole segment no metadata names: kept");
        }
        for d in &p.damaged {
            let (id, start, bytes, why) = (&d.segment_id, d.start_offset, d.bytes, &d.problem);
            out!(
                o,
                "DAMAGED\t{tp}\t{id}\toffset {start}\t{bytes} bytes\t{why}; no metadata references it, but its \
                 manifest is in the store, so it was committed: kept, never deleted as an orphan (`--json` lists its \
                 objects)"
            );
        }
        for x in &p.orphans {
            let young = if x.older_than_min_age { "" } else { "\t(younger than the safety age: kept)" };
            out!(o, "ORPHAN\t{tp}\t{}\t{} bytes{young}", x.key, x.bytes);
        }
        for x in &p.stuck {
            out!(o, "STUCK\t{tp}\t{}\t{} since {}", x.segment_id, segment_state_name(x.state), utc(x.since_ms));
        }
        for a in &p.abandoned {
            let (id, start, since) = (&a.segment_id, a.start_offset, &a.since_ms);
            out!(
                o,
                "ABANDONED\t{tp}\t{id}\toffset {start}\tcopy started {}, never finished; finished copies hold its \
                 offsets (its objects, if any, are orphans)",
                utc(*since)
            );
        }
    }
    for (kek, t) in report.keys.iter().filter(|(_, t)| t.refused > 0) {
        if t.probably_wrong() {
            out!(
                o,
                "KEY\t{kek}\topens none of the {} segments wrapped under it: the key configured as `{kek}` \
                 (encryption.key.{kek}.file or encryption.key.{kek}.kms.key.id) is probably the wrong key; not data \
                 loss",
                t.refused
            );
        } else {
            out!(
                o,
                "KEY\t{kek}\topens {} of the {} segments wrapped under it: the other {} were wrapped with other key \
                 bytes under the id `{kek}`, or their manifests hold another segment's data key",
                t.opened,
                t.opened + t.refused,
                t.refused
            );
        }
    }
    for l in &report.left_alone {
        out!(o, "LEFT ALONE\t{}\t{} bytes\tnot named like a segment's object", l.key, l.bytes);
    }
    let now = SystemTime::now();
    for f in &report.uploads {
        let fields = upload_fields(&f.upload, now);
        match &f.partition {
            None => out!(
                o,
                "UPLOAD\t-\t{fields}\tan incomplete multipart upload not named like a segment's object: left alone"
            ),
            Some(tp) if f.old => out!(o, "UPLOAD\t{tp}\t{fields}\tan incomplete multipart upload (never completed)"),
            Some(tp) => out!(
                o,
                "UPLOAD\t{tp}\t{fields}\tan incomplete multipart upload (never completed)\t\
                 (younger than the safety age: kept)"
            ),
        }
    }
    for key in &report.deleted {
        out!(o, "DELETED\t{key}");
    }
    for a in &report.aborted {
        out!(o, "ABORTED\t{}\tupload {}", a.key, a.upload_id);
    }
    let orphans: usize = report.partitions.values().map(|p| p.orphans.len()).sum();
    let stuck: usize = report.partitions.values().map(|p| p.stuck.len()).sum();
    out!(
        o,
        "audited {} partitions: {} lost, {orphans} orphans, {stuck} stuck, {} abandoned copies, {} deleted, {} gaps, \
         {} unverified, {} unreferenced segments, {} damaged segments kept, {} objects left alone, {} incomplete \
         uploads ({} bytes), {} aborted",
        report.partitions.len(),
        report.lost(),
        report.count(|p| p.abandoned.len()),
        report.deleted.len(),
        report.partitions.values().map(|p| p.gaps.len()).sum::<usize>(),
        report.partitions.values().map(|p| p.unverified.len()).sum::<usize>(),
        report.partitions.values().map(|p| p.unreferenced.len()).sum::<usize>(),
        report.count(|p| p.damaged.len()),
        report.left_alone.len(),
        report.uploads.len(),
        report.upload_bytes(),
        report.aborted.len(),
    );
    outcome(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_parse_with_units() {
        assert_eq!(parse_age("0s").unwrap(), Duration::ZERO);
        assert_eq!(parse_age("10m").unwrap(), Duration::from_secs(600));
        assert_eq!(parse_age("2d").unwrap(), Duration::from_secs(172_800));
        assert!(parse_age("10").unwrap_err().contains("unit"));
        assert!(parse_age("h").is_err());
    }
}
