//! The owner lock: `<data_dir>/data.db.owner-lock`, held exclusively (non-blocking) for the life
//! of the store so that two servers never share one data directory.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::{Path, PathBuf};

use crate::{Result, StoreError};

pub(crate) const LOCK_FILE: &str = "data.db.owner-lock";

#[derive(Debug)]
pub(crate) struct OwnerLock {
    file: File,
    path: PathBuf,
}

impl OwnerLock {
    /// Takes the lock at once or fails with [`StoreError::Locked`]; records our pid in the file.
    pub(crate) fn acquire(data_dir: &Path) -> Result<Self> {
        let path = data_dir.join(LOCK_FILE);
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(&path)?;
        crate::sql::tighten_file(&path)?;
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                return Err(StoreError::Locked {
                    path: data_dir.to_path_buf(),
                    holder_hint: holder_hint(&path),
                });
            }
            Err(TryLockError::Error(e)) => return Err(e.into()),
        }
        file.set_len(0)?;
        writeln!(file, "{}", std::process::id())?;
        file.flush()?;
        tracing::debug!(path = %path.display(), "took the data directory owner lock");
        Ok(Self { file, path })
    }
}

impl Drop for OwnerLock {
    fn drop(&mut self) {
        // Closing the file releases the lock anyway; unlocking first makes it explicit.
        if let Err(e) = self.file.unlock() {
            tracing::warn!(path = %self.path.display(), error = %e, "could not release owner lock");
        }
    }
}

/// `"pid <n>"` when the lock file holds a pid.
fn holder_hint(path: &Path) -> Option<String> {
    let text = std::fs::read_to_string(path).ok()?;
    let pid: u32 = text.lines().next()?.trim().parse().ok()?;
    Some(format!("pid {pid}"))
}
