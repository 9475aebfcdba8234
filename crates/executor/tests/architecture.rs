//! The binary's map, checked: the command-line client (`src/client/`) and the files it shares
//! with the server (`src/control.rs`) know nothing of the engine, the store or the server's
//! code, as `ARCHITECTURE.md` says. The client talks to a server over HTTP only, so it works the
//! same against a remote server as against a local one.

use std::path::Path;

/// What neither may name: the library crates behind the server, and the binary's server half.
const FORBIDDEN: &[&str] = &[
    "executor_engine",
    "executor_server",
    "executor_store",
    "executor_mcp",
    "executor_sandbox",
    "executor_openapi",
    "executor_graphql",
    "crate::server",
    "crate::mcp_stdio",
    "crate::cli",
];

fn check(path: &Path, extra: &[&str], found: &mut Vec<String>) {
    let text = std::fs::read_to_string(path).unwrap();
    for (n, line) in text.lines().enumerate() {
        let code = line.split("//").next().unwrap_or("");
        for name in FORBIDDEN.iter().chain(extra) {
            if code.contains(name) {
                found.push(format!("{}:{}: names {name}", path.display(), n + 1));
            }
        }
    }
}

#[test]
fn the_client_and_control_files_know_nothing_of_the_server() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut found = Vec::new();
    let mut files = 0;
    for entry in std::fs::read_dir(src.join("client")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "rs") {
            check(&path, &[], &mut found);
            files += 1;
        }
    }
    assert!(files >= 8, "the client folder moved? found {files} files");
    // `control` is beneath the client: it may not name it either.
    check(&src.join("control.rs"), &["crate::client"], &mut found);
    assert!(found.is_empty(), "forbidden imports:\n{}", found.join("\n"));
}
