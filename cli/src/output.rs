//! What every command writes with: [`Out`] (stdout, where a reader that stops early ends the command
//! quietly) and the `out!` macro, the units of its tables (sizes, times) and the progress bar.

use crate::exit::{CmdResult, Failure};
use indicatif::{ProgressBar, ProgressStyle};
use rsm_core::Error;
use std::fmt;
use std::io::Write;
use std::time::{SystemTime, UNIX_EPOCH};

/// What a failed write to stdout is: a closed pipe is [`Failure::StdoutClosed`] (a quiet exit), anything
/// else an error.
pub fn stdout_error(e: std::io::Error) -> Failure {
    if e.kind() == std::io::ErrorKind::BrokenPipe { Failure::StdoutClosed } else { Error::from_io("stdout", e).into() }
}

/// Stdout, locked; a closed pipe is [`Failure::StdoutClosed`], which `main` turns into a quiet exit.
/// Each line is written out at once, unless a command that prints many lines asks for them to be buffered
/// ([`Out::buffer_lines`]) and flushes where a reader must see them ([`Out::flush`]); what is buffered is
/// written when it is dropped.
pub struct Out {
    w: std::io::BufWriter<std::io::StdoutLock<'static>>,
    line_by_line: bool,
}

impl Out {
    /// Stdout, locked, written line by line.
    pub fn new() -> Self {
        Out { w: std::io::BufWriter::with_capacity(64 << 10, std::io::stdout().lock()), line_by_line: true }
    }

    /// Writes one line.
    pub fn line(&mut self, args: fmt::Arguments<'_>) -> CmdResult {
        writeln!(self.w, "{args}").map_err(stdout_error)?;
        if self.line_by_line { self.flush() } else { Ok(()) }
    }

    /// Writes one line of bytes made elsewhere (without its newline).
    pub fn bytes_line(&mut self, line: &[u8]) -> CmdResult {
        self.w.write_all(line).and_then(|()| self.w.write_all(b"\n")).map_err(stdout_error)?;
        if self.line_by_line { self.flush() } else { Ok(()) }
    }

    /// Keeps lines in a buffer until [`Out::flush`] (or a full buffer): one write for many lines.
    pub fn buffer_lines(&mut self) {
        self.line_by_line = false;
    }

    /// Writes out what is buffered.
    pub fn flush(&mut self) -> CmdResult {
        self.w.flush().map_err(stdout_error)
    }
}

impl Drop for Out {
    fn drop(&mut self) {
        let _ = self.w.flush();
    }
}

/// `out!(o, "...", args)`: one line to [`Out`], returning from the function on a write error (so the
/// function returns a [`CmdResult`]).
macro_rules! out {
    ($o:expr, $($t:tt)*) => {
        $o.line(format_args!($($t)*))?
    };
}
pub(crate) use out;

/// Now, in ms since the epoch.
pub fn now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as i64).unwrap_or(0)
}

/// Bytes in MiB.
pub fn mib(b: u64) -> f64 {
    b as f64 / (1 << 20) as f64
}

/// `1.5 MiB`: bytes in binary units, one decimal from KiB up.
pub fn human(bytes: u64) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut v = bytes as f64;
    let mut unit = 0;
    while v >= 1024.0 && unit < UNITS.len() - 1 {
        v /= 1024.0;
        unit += 1;
    }
    if unit == 0 { format!("{bytes} B") } else { format!("{v:.1} {}", UNITS[unit]) }
}

/// A time in ms since the epoch as UTC, `2026-05-01T12:00:00Z` (`-` when unknown).
pub fn utc(ms: i64) -> String {
    if ms < 0 {
        return "-".to_string();
    }
    let secs = ms / 1000;
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Days to civil date (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z", rem / 3600, rem % 3600 / 60, rem % 60)
}

/// An age, coarse: `45s`, `12m`, `3h 5m`, `2d 4h`.
pub fn age(d: std::time::Duration) -> String {
    let s = d.as_secs();
    match s {
        0..60 => format!("{s}s"),
        60..3600 => format!("{}m", s / 60),
        3600..86_400 => format!("{}h {}m", s / 3600, s % 3600 / 60),
        _ => format!("{}d {}h", s / 86_400, s % 86_400 / 3600),
    }
}

/// A time as ms since the epoch (-1 when unknown), for [`utc`] and JSON.
pub fn epoch_ms(t: Option<SystemTime>) -> i64 {
    t.and_then(|t| t.duration_since(UNIX_EPOCH).ok()).map_or(-1, |d| d.as_millis() as i64)
}

/// An incomplete multipart upload as the tab-separated fields `rsm audit` and `rsm sweep` print: its key,
/// bytes, parts, when it started and how long ago it last wrote (`now`).
pub fn upload_fields(u: &rsm_core::backend::IncompleteUpload, now: SystemTime) -> String {
    let bytes = u.bytes.map_or("? bytes".to_string(), |b| format!("{b} bytes"));
    let ago = u.last_written().map_or("-".to_string(), |t| age(now.duration_since(t).unwrap_or_default()));
    format!("{}	{bytes}	{} parts	started {}, last written {ago} ago", u.key, u.parts, utc(epoch_ms(u.initiated)))
}

/// A progress bar of `total` bytes, named `what`.
pub fn progress(total: u64, what: &str) -> ProgressBar {
    let pb = ProgressBar::new(total);
    pb.set_style(
        ProgressStyle::with_template("{msg} [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec}")
            .expect("valid template")
            .progress_chars("=> "),
    );
    pb.set_message(what.to_string());
    pb
}
