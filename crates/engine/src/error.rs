use std::fmt;
use std::io;
use std::path::PathBuf;

pub type Result<T> = std::result::Result<T, Error>;

/// What can go wrong in an engine. Each variant says enough to act on: which file and
/// where for damage, what was being done for I/O.
#[derive(Debug)]
pub enum Error {
    /// An operating-system call failed; `context` says what the engine was doing.
    Io { context: String, source: io::Error },
    /// Stored data failed a check (checksum, length, format): the store refuses to
    /// guess rather than return wrong data.
    Corruption {
        file: PathBuf,
        offset: u64,
        detail: String,
    },
    /// The engine cannot do this at all (for example ordered ranges on a hash index).
    Unsupported(&'static str),
    /// The request itself is malformed.
    InvalidArgument(String),
    /// An earlier write failed in a way that leaves the log's state uncertain, so the
    /// engine refuses writes until it is reopened; reads still work.
    WritesStopped(String),
    /// The engine was closed.
    Closed,
}

impl Error {
    pub fn io(context: impl Into<String>, source: io::Error) -> Error {
        Error::Io {
            context: context.into(),
            source,
        }
    }

    pub fn corruption(file: impl Into<PathBuf>, offset: u64, detail: impl Into<String>) -> Error {
        Error::Corruption {
            file: file.into(),
            offset,
            detail: detail.into(),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Io { context, source } => write!(f, "{context}: {source}"),
            Error::Corruption {
                file,
                offset,
                detail,
            } => write!(
                f,
                "corruption in {} at offset {offset}: {detail}",
                file.display()
            ),
            Error::Unsupported(what) => write!(f, "unsupported: {what}"),
            Error::InvalidArgument(what) => write!(f, "invalid argument: {what}"),
            Error::WritesStopped(why) => write!(f, "writes stopped until reopen: {why}"),
            Error::Closed => write!(f, "the engine is closed"),
        }
    }
}

/// A copy for everyone who shares one failure (the writers of a failed write group).
/// An I/O error keeps its kind and message.
impl Clone for Error {
    fn clone(&self) -> Error {
        match self {
            Error::Io { context, source } => Error::Io {
                context: context.clone(),
                source: io::Error::new(source.kind(), source.to_string()),
            },
            Error::Corruption {
                file,
                offset,
                detail,
            } => Error::Corruption {
                file: file.clone(),
                offset: *offset,
                detail: detail.clone(),
            },
            Error::Unsupported(what) => Error::Unsupported(what),
            Error::InvalidArgument(what) => Error::InvalidArgument(what.clone()),
            Error::WritesStopped(why) => Error::WritesStopped(why.clone()),
            Error::Closed => Error::Closed,
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}
