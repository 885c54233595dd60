//! When an engine's writes reach the disk: Redis's `appendfsync` choices.

use std::fmt;
use std::str::FromStr;

/// When a durable engine's log reaches the disk.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FsyncPolicy {
    /// Before a write is acknowledged (group commit shares the sync).
    Always,
    /// Once a second in the background: a crash loses at most about a second.
    #[default]
    EverySec,
    /// When the operating system decides; a process crash loses nothing, a machine
    /// crash may lose recent writes.
    No,
}

impl FromStr for FsyncPolicy {
    type Err = String;

    fn from_str(s: &str) -> Result<FsyncPolicy, String> {
        match s.to_ascii_lowercase().as_str() {
            "always" => Ok(FsyncPolicy::Always),
            "everysec" => Ok(FsyncPolicy::EverySec),
            "no" => Ok(FsyncPolicy::No),
            _ => Err(format!(
                "fsync policy must be always, everysec or no, not {s:?}"
            )),
        }
    }
}

impl fmt::Display for FsyncPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            FsyncPolicy::Always => "always",
            FsyncPolicy::EverySec => "everysec",
            FsyncPolicy::No => "no",
        })
    }
}
