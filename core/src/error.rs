//! The one error type of the core: a small closed set of kinds, each with a
//! stable code that every binding exposes unchanged.

use std::fmt;

/// What went wrong, as a stable category. Bindings map each kind to their
/// host's idiom; [`ErrorKind::code`] is the string they all expose.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// A key or object does not exist.
    NotFound,
    /// Bytes on disk break a structural rule of the format.
    Corrupt,
    /// A page, block or record failed its checksum.
    ChecksumMismatch,
    /// The file is a bale file of a kind or version this build cannot read.
    UnsupportedVersion,
    /// The file is not a bale file at all (wrong magic).
    NotABaleFile,
    /// Another handle or process holds the lock this operation needs.
    Locked,
    /// The caller passed something the operation cannot accept.
    InvalidArgument,
    /// A size limit was exceeded (key, value, file).
    TooLarge,
    /// The operation conflicts with the state of the store (e.g. it was replaced).
    Conflict,
    /// The handle or transaction was closed or poisoned.
    Closed,
    /// The operating system reported an I/O error.
    Io,
}

impl ErrorKind {
    /// Every kind, so that bindings can prove they map each one.
    pub const ALL: [ErrorKind; 11] = [
        ErrorKind::NotFound,
        ErrorKind::Corrupt,
        ErrorKind::ChecksumMismatch,
        ErrorKind::UnsupportedVersion,
        ErrorKind::NotABaleFile,
        ErrorKind::Locked,
        ErrorKind::InvalidArgument,
        ErrorKind::TooLarge,
        ErrorKind::Conflict,
        ErrorKind::Closed,
        ErrorKind::Io,
    ];

    /// The stable SCREAMING_CASE code of this kind.
    pub fn code(self) -> &'static str {
        match self {
            ErrorKind::NotFound => "NOT_FOUND",
            ErrorKind::Corrupt => "CORRUPT",
            ErrorKind::ChecksumMismatch => "CHECKSUM_MISMATCH",
            ErrorKind::UnsupportedVersion => "UNSUPPORTED_VERSION",
            ErrorKind::NotABaleFile => "NOT_A_BALE_FILE",
            ErrorKind::Locked => "LOCKED",
            ErrorKind::InvalidArgument => "INVALID_ARGUMENT",
            ErrorKind::TooLarge => "TOO_LARGE",
            ErrorKind::Conflict => "CONFLICT",
            ErrorKind::Closed => "CLOSED",
            ErrorKind::Io => "IO",
        }
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.code())
    }
}

/// A core error: a kind, a lower-case message saying what happened and what
/// to do, optional location context, and the OS error where there is one.
#[derive(Debug)]
pub struct Error {
    kind: ErrorKind,
    message: String,
    page: Option<u64>,
    source: Option<std::io::Error>,
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Error {
        Error { kind, message: message.into(), page: None, source: None }
    }

    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    pub fn code(&self) -> &'static str {
        self.kind.code()
    }

    /// The message without the code prefix.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The page the error was found on, when it concerns one.
    pub fn page(&self) -> Option<u64> {
        self.page
    }

    pub(crate) fn at_page(mut self, page: u64) -> Error {
        if self.page.is_none() {
            self.page = Some(page);
        }
        self
    }

    /// The same error, its message prefixed with where it happened.
    pub(crate) fn with_context(mut self, at: &str) -> Error {
        self.message = format!("{at}: {}", self.message);
        self
    }

    pub(crate) fn corrupt(message: impl Into<String>) -> Error {
        Error::new(ErrorKind::Corrupt, message)
    }

    pub(crate) fn corrupt_page(page: u64, what: impl fmt::Display) -> Error {
        Error::new(ErrorKind::Corrupt, format!("page {page}: {what}; the file is damaged, run `bale check`"))
            .at_page(page)
    }

    pub(crate) fn invalid(message: impl Into<String>) -> Error {
        Error::new(ErrorKind::InvalidArgument, message)
    }

    pub(crate) fn io(context: &str, err: std::io::Error) -> Error {
        Error { kind: ErrorKind::Io, message: format!("{context}: {err}"), page: None, source: Some(err) }
    }

    /// The underlying OS error, if any.
    pub fn io_error(&self) -> Option<&std::io::Error> {
        self.source.as_ref()
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.kind.code(), self.message)
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source.as_ref().map(|e| e as &(dyn std::error::Error + 'static))
    }
}

impl From<std::io::Error> for Error {
    fn from(err: std::io::Error) -> Error {
        Error::io("i/o error", err)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_distinct_and_screaming_case() {
        let mut seen = std::collections::HashSet::new();
        for k in ErrorKind::ALL {
            let c = k.code();
            assert!(seen.insert(c), "duplicate code {c}");
            assert!(c.chars().all(|ch| ch.is_ascii_uppercase() || ch == '_'), "{c}");
        }
    }

    #[test]
    fn display_starts_with_code() {
        let e = Error::corrupt_page(7, "bad count");
        assert_eq!(e.page(), Some(7));
        assert!(e.to_string().starts_with("CORRUPT: page 7: bad count"));
    }
}
