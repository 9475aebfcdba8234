//! `executor`: the command-line entry point. A thin layer over the library crates: it parses
//! flags into settings, opens the data directory and runs the server (or the stdio MCP server).

mod cli;
mod client;
mod control;
mod mcp_stdio;
mod server;
mod team;

use std::process::ExitCode;

fn main() -> ExitCode {
    one_malloc_arena();
    cli::run()
}

/// glibc gives each thread that contends for the heap an arena of its own (up to 8 per CPU) and
/// keeps what those arenas freed: after 30 tool answers of 10 MiB the server held 71 MiB, against
/// 31 MiB with one arena, and 815 MiB after the heavier runs of issue #17. One arena measured no
/// slower (`bench/big-answers.sh`, `bench/load.sh`; BENCHMARKS.md). `MALLOC_ARENA_MAX` in the
/// environment still wins.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn one_malloc_arena() {
    if std::env::var_os("MALLOC_ARENA_MAX").is_some() {
        return;
    }
    // SAFETY: `mallopt` only sets a tunable of glibc's allocator, which it reads under its own
    // lock; this runs first in `main`, before any other thread exists.
    #[allow(unsafe_code)]
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 1);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn one_malloc_arena() {}

/// Hands the heap's free pages back to the system. glibc keeps what a large parse freed (issue
/// #18: RSS stayed at 179 MB after importing GitHub's spec, against 48 MB after a restart); the
/// engine calls this when it drops such a cache.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
pub(crate) fn trim_heap() {
    // SAFETY: `malloc_trim` takes glibc's arena locks itself and only returns free pages to the
    // kernel; it reads no memory of ours and is safe to call from any thread at any time.
    #[allow(unsafe_code)]
    unsafe {
        libc::malloc_trim(0);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub(crate) fn trim_heap() {}
