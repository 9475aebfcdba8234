//! Makes sure `web/dist` (the console's build output) exists and is newer than `web/`'s sources,
//! building it with npm when it is not, and tells the embed where it is.
//!
//! `EXECUTOR_WEB_DIST=<dir>` embeds a console built elsewhere (packagers without Node), and
//! `EXECUTOR_WEB_DIST=none` embeds a one-page placeholder instead of the console.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::SystemTime;

fn main() {
    println!("cargo:rerun-if-env-changed=EXECUTOR_WEB_DIST");
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    let web = manifest.join("../../web");
    let dist = match std::env::var("EXECUTOR_WEB_DIST") {
        Ok(dir) if dir == "none" => placeholder(),
        Ok(dir) => {
            let dir = PathBuf::from(dir);
            if !dir.join("index.html").is_file() {
                panic!("EXECUTOR_WEB_DIST={} holds no index.html", dir.display());
            }
            println!("cargo:rerun-if-changed={}", dir.display());
            dir
        }
        Err(_) => {
            // Only paths that exist: cargo treats a missing one as changed on every build,
            // which reran this script and relinked the binary each time (`public` is optional).
            for watched in SOURCES.iter().map(|s| web.join(s)).filter(|p| p.exists()) {
                println!("cargo:rerun-if-changed={}", watched.display());
            }
            let dist = web.join("dist");
            if stale(&web, &dist) {
                build(&web);
            }
            dist
        }
    };
    let dist = dist
        .canonicalize()
        .expect("the console's dist directory exists");
    println!("cargo:rustc-env=EXECUTOR_CONSOLE_DIST={}", dist.display());
}

/// What the console is built from (`node_modules` and `dist` excluded).
const SOURCES: &[&str] = &[
    "src",
    "public",
    "index.html",
    "package.json",
    "package-lock.json",
    "vite.config.ts",
    "tsconfig.json",
    "scripts",
];

fn stale(web: &Path, dist: &Path) -> bool {
    let Some(built) = modified(&dist.join("index.html")) else {
        return true;
    };
    SOURCES
        .iter()
        .filter_map(|s| newest(&web.join(s)))
        .any(|source| source > built)
}

fn modified(path: &Path) -> Option<SystemTime> {
    path.metadata().and_then(|m| m.modified()).ok()
}

fn newest(path: &Path) -> Option<SystemTime> {
    let meta = path.metadata().ok()?;
    if !meta.is_dir() {
        return meta.modified().ok();
    }
    std::fs::read_dir(path)
        .ok()?
        .filter_map(|entry| newest(&entry.ok()?.path()))
        .max()
}

fn build(web: &Path) {
    let npm = if cfg!(windows) { "npm.cmd" } else { "npm" };
    if !web.join("node_modules/.package-lock.json").is_file() {
        run(web, npm, &["ci", "--no-audit", "--no-fund"]);
    }
    // `vite build` only: the type check is the console's own test step, so a type error
    // does not stop a Rust build.
    run(web, npm, &["run", "bundle"]);
}

fn run(dir: &Path, program: &str, args: &[&str]) {
    let status = Command::new(program)
        .args(args)
        .current_dir(dir)
        .status()
        .unwrap_or_else(|e| {
            panic!(
                "building the web console needs Node.js ≥ 20 and npm ({program}: {e}); \
                 set EXECUTOR_WEB_DIST to a built console, or to `none` to build without it"
            )
        });
    if !status.success() {
        panic!(
            "`{program} {}` in {} failed ({status})",
            args.join(" "),
            dir.display()
        );
    }
}

/// A console-less build still answers `/` with a page that says so.
fn placeholder() -> PathBuf {
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets it")).join("no-console");
    std::fs::create_dir_all(&out).expect("OUT_DIR is writable");
    std::fs::write(
        out.join("index.html"),
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>Executor</title></head>\
         <body><h1>Executor is running</h1><p>This build has no web console \
         (it was built with EXECUTOR_WEB_DIST=none). The HTTP API is under /api and agents \
         connect to /mcp.</p></body></html>",
    )
    .expect("OUT_DIR is writable");
    out
}
