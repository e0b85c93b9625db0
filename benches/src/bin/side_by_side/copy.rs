//! The copy measurement of `side_by_side`: a segment's files copied by `cp` (with and without a sync) and
//! by `TieredStorage` over the filesystem store (with and without fsync), each timed over several runs.

use super::*;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CopyKind {
    Cp,
    CpFsync,
    OursNoFsync,
    OursFsync,
    // Diagnostics: the parts of our copy on their own.
    OursNoVerify,
    PutFileOnly,
    ScanOnly,
}

impl CopyKind {
    /// The measured copies.
    pub(crate) const MAIN: [CopyKind; 4] =
        [CopyKind::Cp, CopyKind::CpFsync, CopyKind::OursNoFsync, CopyKind::OursFsync];
    /// The breakdown of ours.
    pub(crate) const DIAGNOSTIC: [CopyKind; 3] = [CopyKind::OursNoVerify, CopyKind::PutFileOnly, CopyKind::ScanOnly];

    pub(crate) fn label(self) -> &'static str {
        match self {
            CopyKind::Cp => "cp",
            CopyKind::CpFsync => "cp + fsync of the copies",
            CopyKind::OursNoFsync => "TieredStorage/FsBackend fsync=off",
            CopyKind::OursFsync => "TieredStorage/FsBackend fsync=on",
            CopyKind::OursNoVerify => "ours fsync=off, verify_checksums=off",
            CopyKind::PutFileOnly => "FsBackend::put_file(.log) fsync=off",
            CopyKind::ScanOnly => "CRC scan of .log alone (1 MiB reads)",
        }
    }
}

/// Reads the `.log` at `path` in 1 MiB blocks and checks every batch's CRC-32C, as a copy's scan does.
pub(crate) fn scan_file(path: &Path) -> BoxResult<u64> {
    use std::io::Read;
    let mut file = File::open(path)?;
    let mut buf = vec![0u8; MIB];
    let (mut filled, mut position, mut batches) = (0usize, 0u64, 0u64);
    loop {
        let n = file.read(&mut buf[filled..])?;
        filled += n;
        let mut it = BatchIter::new(&buf[..filled], position, true);
        while it.next_complete()?.is_some() {
            batches += 1;
        }
        let used = it.consumed();
        if used == 0 && filled == buf.len() {
            return Err(format!("{}: a batch at {position} is larger than 1 MiB", path.display()).into());
        }
        buf.copy_within(used..filled, 0);
        filled -= used;
        position += used as u64;
        if n == 0 {
            return if filled == 0 { Ok(batches) } else { Err(format!("truncated batch at {position}").into()) };
        }
    }
}

/// What the copy runs share.
pub(crate) struct CopySetup<'a> {
    pub(crate) rt: &'a Runtime,
    pub(crate) root: &'a Path,
    pub(crate) files: Vec<PathBuf>,
    pub(crate) data: &'a LogSegmentData,
    pub(crate) md: &'a RemoteLogSegmentMetadata,
}

impl CopySetup<'_> {
    /// One timed copy of `kind` into a fresh directory; returns the time, the directory and the metadata
    /// of the segment copied (for our copies).
    pub(crate) fn run(&self, kind: CopyKind, run: usize) -> BoxResult<(Duration, PathBuf, RemoteLogSegmentMetadata)> {
        let dest = self.root.join(format!("{kind:?}-{run}").to_lowercase());
        let md = fresh_id(self.md);
        let elapsed = match kind {
            CopyKind::Cp | CopyKind::CpFsync => {
                fs::create_dir(&dest)?;
                sync_all();
                let t = Instant::now();
                let status = Command::new("cp").args(&self.files).arg(&dest).status()?;
                if !status.success() {
                    return Err(format!("cp failed: {status}").into());
                }
                if kind == CopyKind::CpFsync {
                    for f in &self.files {
                        File::open(dest.join(f.file_name().expect("file name")))?.sync_all()?;
                    }
                    File::open(&dest)?.sync_all()?;
                }
                t.elapsed()
            }
            CopyKind::OursNoFsync | CopyKind::OursFsync | CopyKind::OursNoVerify => {
                let config = TieredConfig { verify_checksums: kind != CopyKind::OursNoVerify, ..Default::default() };
                let backend = FsBackend::create(&dest, kind == CopyKind::OursFsync)?;
                let tiered = TieredStorage::new(Arc::new(backend), config);
                sync_all();
                let t = Instant::now();
                self.rt.block_on(tiered.copy_log_segment_data(&md, self.data))?;
                t.elapsed()
            }
            CopyKind::PutFileOnly => {
                let backend = FsBackend::create(&dest, false)?;
                let len = fs::metadata(&self.data.log_segment)?.len();
                sync_all();
                let t = Instant::now();
                self.rt.block_on(backend.put_file("t/0/segment.log", &self.data.log_segment, len))?;
                t.elapsed()
            }
            CopyKind::ScanOnly => {
                fs::create_dir(&dest)?;
                sync_all();
                let t = Instant::now();
                scan_file(&self.data.log_segment)?;
                t.elapsed()
            }
        };
        Ok((elapsed, dest, md))
    }
}

pub(crate) struct CopyResult {
    pub(crate) times: HashMap<&'static str, Vec<Duration>>,
    pub(crate) kept_store: PathBuf,
    pub(crate) kept_md: RemoteLogSegmentMetadata,
}

pub(crate) fn bench_copy(setup: &CopySetup<'_>, runs: usize) -> BoxResult<CopyResult> {
    // Warm the page cache with every source file (generation left it warm; this makes sure).
    for f in &setup.files {
        std::io::copy(&mut File::open(f)?, &mut std::io::sink())?;
    }
    let mut times: HashMap<&'static str, Vec<Duration>> = HashMap::new();
    let mut kept = None;
    for run in 0..runs {
        // Interleaved, so drift (other load, the disk's state) spreads over all four.
        for kind in CopyKind::MAIN.into_iter().chain(CopyKind::DIAGNOSTIC) {
            let (d, dest, md) = setup.run(kind, run)?;
            eprintln!("  copy run {run}: {:<40} {:>8.3} s", kind.label(), secs(d));
            times.entry(kind.label()).or_default().push(d);
            if kind == CopyKind::OursFsync && run + 1 == runs {
                kept = Some((dest, md));
            } else {
                fs::remove_dir_all(&dest)?;
            }
        }
    }
    sync_all();
    let (kept_store, kept_md) = kept.expect("at least one run");
    Ok(CopyResult { times, kept_store, kept_md })
}
