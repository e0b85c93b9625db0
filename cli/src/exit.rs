//! How a command ends when it does not succeed ([`Failure`]), and the exit status each way gives.

use rsm_core::Error;
use std::io::Write;
use std::process::ExitCode;

/// A command's result: `Ok` is exit status 0.
pub type CmdResult<T = ()> = std::result::Result<T, Failure>;

/// Why a command did not succeed.
#[derive(Debug)]
pub enum Failure {
    /// The reader of stdout stopped early (`rsm ls | head`): nothing more to say, so the command ends
    /// quietly with success.
    StdoutClosed,
    /// An error: one line on stderr, and exit status `status`.
    Error {
        /// What went wrong.
        error: Error,
        /// The exit status: 1, unless the command gives one of its own (`rsm audit` exits 3 for segments it
        /// could not check).
        status: u8,
    },
}

impl From<Error> for Failure {
    /// An error with exit status 1.
    fn from(error: Error) -> Self {
        Failure::Error { error, status: 1 }
    }
}

impl Failure {
    /// `error`, ending the process with exit status `status`.
    pub fn with_status(error: Error, status: u8) -> Self {
        Failure::Error { error, status }
    }

    /// Says the error on stderr (`rsm: …`) and gives the exit status.
    pub fn exit(self) -> ExitCode {
        match self {
            Failure::StdoutClosed => ExitCode::SUCCESS,
            Failure::Error { error, status } => {
                let _ = writeln!(std::io::stderr(), "rsm: {}", error.full_message());
                ExitCode::from(status)
            }
        }
    }
}
