//! The benchmark suite.
use crate::GuestError;
use std::path::PathBuf;

/// Options of `vmlab reproduce guest`.
pub struct Options {
    /// Fewer iterations and repeats.
    pub quick: bool,
    /// Directory for guest.csv, guest.json, guest.svg.
    pub out: PathBuf,
    /// The vmlab binary (runs `vmlab guest`).
    pub vmlab: PathBuf,
    /// The command line, recorded in the JSON.
    pub command_line: String,
}

/// What `reproduce` produced.
pub struct Report {
    /// The table and the files written.
    pub text: String,
    /// The JSON document.
    pub json: String,
}

/// Runs the suite.
pub fn reproduce(_o: &Options) -> Result<Report, GuestError> {
    Err(GuestError::Usage("not yet".into()))
}
