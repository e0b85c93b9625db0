//! One writer per directory: an exclusive `flock` on the directory itself, held for as long as the
//! [`DirLock`] lives (the kernel drops it when the process dies, kill -9 included, so a crash never leaves a
//! stale lock). Nothing is written into the directory. A second writer fails at once, naming the
//! directory and the process that holds it (read from `/proc/locks`).

use crate::error::{Error, Result};
use std::fs::File;
use std::os::fd::AsRawFd;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// An exclusive lock on a directory, released when dropped.
#[derive(Debug)]
pub struct DirLock {
    dir: PathBuf,
    _file: File,
}

impl DirLock {
    /// Takes the lock on `dir` without waiting; `what` says what the directory is in the error
    /// ("partition directory", "metadata directory"). A directory that does not exist is an error naming it.
    pub fn exclusive(dir: &Path, what: &str) -> Result<DirLock> {
        let file = File::open(dir).map_err(|e| Error::from_io(format!("{what} {}", dir.display()), e))?;
        // SAFETY: a valid open descriptor; flock only takes or refuses a lock on it.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
            let err = std::io::Error::last_os_error();
            if err.raw_os_error() != Some(libc::EWOULDBLOCK) {
                return Err(Error::from_io(format!("locking {what} {}", dir.display()), err));
            }
            let holder = holder_of(&file).map_or_else(|| "another process".to_string(), |pid| format!("process {pid}"));
            return Err(Error::busy(format!(
                "{what} {} is in use by {holder} (another rsm command or engine writing it): one writer at a time, \
                 nothing was changed",
                dir.display()
            )));
        }
        Ok(DirLock { dir: dir.to_path_buf(), _file: file })
    }

    /// The directory locked.
    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

/// The process holding a `flock` on `file`'s inode, from `/proc/locks` (`… FLOCK ADVISORY WRITE <pid>
/// <major>:<minor>:<inode> …`).
fn holder_of(file: &File) -> Option<u32> {
    let meta = file.metadata().ok()?;
    let ino = meta.ino();
    let locks = std::fs::read_to_string("/proc/locks").ok()?;
    locks.lines().find_map(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let at = fields.iter().position(|f| *f == "FLOCK")?;
        let (pid, dev_ino) = (fields.get(at + 3)?, fields.get(at + 4)?);
        let file_ino: u64 = dev_ino.rsplit(':').next()?.parse().ok()?;
        (file_ino == ino).then(|| pid.parse().ok()).flatten()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Another process that takes an exclusive flock on `dir` as a second writer would (blocking or not),
    /// prints `held` or `refused`, and holds it for a minute; with the line it printed.
    fn other_process(dir: &Path, wait: bool) -> (std::process::Child, String) {
        let flags = if wait { "fcntl.LOCK_EX" } else { "fcntl.LOCK_EX|fcntl.LOCK_NB" };
        let script = format!(
            "import fcntl,os,sys,time\nd=os.open(sys.argv[1], os.O_RDONLY)\ntry:\n fcntl.flock(d, {flags}); \
             print('held', flush=True)\nexcept OSError:\n print('refused', flush=True)\ntime.sleep(60)"
        );
        let mut child = std::process::Command::new("python3")
            .arg("-c")
            .arg(script)
            .arg(dir)
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("python3 runs");
        let mut line = String::new();
        std::io::BufRead::read_line(&mut std::io::BufReader::new(child.stdout.take().unwrap()), &mut line).unwrap();
        (child, line.trim().to_string())
    }

    #[test]
    fn a_second_writer_is_refused_at_once_and_the_lock_goes_with_its_holder() {
        let t = tempfile::tempdir().unwrap();
        let first = DirLock::exclusive(t.path(), "metadata directory").unwrap();
        let (mut other, said) = other_process(t.path(), false);
        other.kill().unwrap();
        other.wait().unwrap();
        assert_eq!(said, "refused", "the other process must not get a lock this one holds");
        drop(first);

        let (mut holder, said) = other_process(t.path(), true);
        assert_eq!(said, "held");
        let e = DirLock::exclusive(t.path(), "metadata directory").unwrap_err();
        let pid = holder.id();
        holder.kill().unwrap();
        holder.wait().unwrap();
        assert_eq!(e.kind(), crate::error::ErrorKind::Busy, "{e}");
        let text = e.to_string();
        assert!(text.contains(&format!("process {pid}")), "names the holder: {text}");
        assert!(text.contains(&t.path().display().to_string()), "names the directory: {text}");
        // The holder is gone (killed): the lock went with it.
        DirLock::exclusive(t.path(), "metadata directory").unwrap();
        let missing = DirLock::exclusive(&t.path().join("nope"), "metadata directory").unwrap_err();
        assert!(missing.to_string().contains("nope"), "{missing}");
        assert!(!t.path().join("nope").exists());
    }
}
