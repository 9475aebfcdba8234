//! The command-line client: commands that talk to a server over its HTTP API (`call`, `resume`,
//! `tools`, `daemon status|stop|restart`), the server profiles, the daemon's auto-start and the
//! OS service. Knows nothing of the engine, the store or the server's code: only the wire and
//! the files of [`crate::control`].

pub(crate) mod api;
pub(crate) mod autostart;
pub(crate) mod browse;
pub(crate) mod call;
pub(crate) mod daemon;
pub(crate) mod login;
pub(crate) mod profiles;
pub(crate) mod render;
pub(crate) mod service;
pub(crate) mod spinner;
pub(crate) mod target;
pub(crate) mod tools;

use std::fmt;
use std::process::ExitCode;

/// A command's failure: a one-line message on stderr and the exit code that says which kind.
#[derive(Debug)]
pub(crate) struct CliError {
    pub(crate) code: u8,
    pub(crate) message: String,
}

impl CliError {
    /// Exit 1: the command ran and failed (a tool's error, an unknown tool, a refused request).
    pub(crate) fn failed(message: impl Into<String>) -> Self {
        Self {
            code: 1,
            message: message.into(),
        }
    }

    /// Exit 2: the command line itself is wrong; nothing was sent.
    pub(crate) fn usage(message: impl Into<String>) -> Self {
        Self {
            code: 2,
            message: message.into(),
        }
    }

    /// Exit 3: no server answered (as `systemctl status` says "not running").
    pub(crate) fn unreachable(message: impl Into<String>) -> Self {
        Self {
            code: 3,
            message: message.into(),
        }
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl From<anyhow::Error> for CliError {
    fn from(e: anyhow::Error) -> Self {
        Self::failed(format!("{e:#}"))
    }
}

pub(crate) type CliResult<T = ExitCode> = Result<T, CliError>;

/// A client command's output piped into `head` ends it quietly, as for any Unix tool, instead of
/// failing to print (Rust ignores SIGPIPE; the server commands keep it ignored).
pub(crate) fn die_on_closed_pipe() {
    // SAFETY: restores the default action of one signal before any thread of ours exists;
    // `signal` touches no memory of ours.
    #[allow(unsafe_code)]
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

/// Runs one client command on a single-threaded runtime: a command makes a handful of requests
/// in sequence, and starting worker threads would only add to its start.
pub(crate) fn block_on<F>(future: F) -> CliResult
where
    F: std::future::Future<Output = CliResult>,
{
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::failed(format!("starting the async runtime: {e}")))?;
    runtime.block_on(future)
}
