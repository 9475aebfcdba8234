//! `executor`: the command-line entry point. A thin layer over the library crates: it parses
//! flags into settings, opens the data directory and runs the server (or the stdio MCP server).

mod cli;
mod mcp_stdio;
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
