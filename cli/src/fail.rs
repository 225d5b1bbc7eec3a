//! Errors of the command line and the exit codes they map to.

use bale::ErrorKind;

/// Exit codes. They are part of the interface: scripts test them.
pub mod exit {
    pub const OK: u8 = 0;
    pub const ERROR: u8 = 1;
    pub const USAGE: u8 = 2;
    pub const CORRUPT: u8 = 3;
    pub const LOCKED: u8 = 4;
    pub const NOT_BALE: u8 = 5;
}

/// The exit-code table printed at the end of `bale --help`.
pub const EXIT_CODES_HELP: &str = "\
Exit codes:
  0  success
  1  error; also `kv get` of a key, `obj get` of an object or `bitable get`
     of a key that is not in the store or table (code NOT_FOUND)
  2  usage error: unknown verb or flag, missing argument, bad --hex key,
     malformed object id
  3  corruption: `check` or `obj validate` found problems, or a command met
     a CORRUPT or CHECKSUM_MISMATCH error
  4  locked: another handle or process is writing the store (LOCKED);
     retry, or pass --wait to queue behind it (`obj rm`, `obj repack`,
     `obj clean` and `obj repair` need the object store to themselves and
     do not wait)
  5  not a bale store (NOT_A_BALE_FILE), or a bale format version this
     build cannot read (UNSUPPORTED_VERSION)

Errors are printed to stderr as `bale: CODE: message`. With --json they are
also printed to stdout as {\"error\": {\"code\": \"CODE\", \"message\": \"...\"}}.";

/// Why a command failed: a stable code, a message, and the exit code.
#[derive(Debug)]
pub struct Failure {
    pub code: &'static str,
    pub message: String,
    pub exit: u8,
    /// The reader of our output went away (`bale kv ls | head`): stop
    /// quietly, this is not an error.
    pub broken_pipe: bool,
}

impl Failure {
    pub fn new(code: &'static str, message: impl Into<String>, exit: u8) -> Failure {
        Failure { code, message: message.into(), exit, broken_pipe: false }
    }

    pub fn usage(message: impl Into<String>) -> Failure {
        Failure::new("USAGE", message, exit::USAGE)
    }

    pub fn not_found(message: impl Into<String>) -> Failure {
        Failure::new("NOT_FOUND", message, exit::ERROR)
    }

    pub fn invalid(message: impl Into<String>) -> Failure {
        Failure::new("INVALID_ARGUMENT", message, exit::ERROR)
    }

    /// An I/O error outside the store (stdin, stdout, an input file).
    pub fn io(context: impl std::fmt::Display, err: std::io::Error) -> Failure {
        let mut f = Failure::new("IO", format!("{context}: {err}"), exit::ERROR);
        f.broken_pipe = err.kind() == std::io::ErrorKind::BrokenPipe;
        f
    }

    /// An error writing to standard output.
    pub fn stdout(err: std::io::Error) -> Failure {
        Failure::io("cannot write to stdout", err)
    }
}

/// The exit code for an error of the core.
pub fn exit_for(kind: ErrorKind) -> u8 {
    match kind {
        ErrorKind::Corrupt | ErrorKind::ChecksumMismatch => exit::CORRUPT,
        ErrorKind::Locked => exit::LOCKED,
        ErrorKind::NotABaleFile | ErrorKind::UnsupportedVersion => exit::NOT_BALE,
        _ => exit::ERROR,
    }
}

impl From<bale::Error> for Failure {
    fn from(e: bale::Error) -> Failure {
        let mut f = Failure::new(e.code(), e.message(), exit_for(e.kind()));
        f.broken_pipe = e.io_error().is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe);
        f
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_core_kind_has_an_exit_code() {
        for k in ErrorKind::ALL {
            let code = exit_for(k);
            assert!((1..=5).contains(&code), "{k:?} -> {code}");
            assert_ne!(code, exit::USAGE, "{k:?} must not look like a usage error");
        }
        assert_eq!(exit_for(ErrorKind::Locked), 4);
        assert_eq!(exit_for(ErrorKind::ChecksumMismatch), 3);
        assert_eq!(exit_for(ErrorKind::UnsupportedVersion), 5);
    }
}
