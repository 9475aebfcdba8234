//! `executor`: the command-line entry point. A thin layer over the library crates: it parses
//! flags into settings, opens the data directory and runs the server.

mod cli;
mod server;

use std::process::ExitCode;

fn main() -> ExitCode {
    match cli::run() {
        Ok(code) => code,
        Err(e) => {
            eprintln!("executor: {e:#}");
            ExitCode::FAILURE
        }
    }
}
