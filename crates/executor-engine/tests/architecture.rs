//! The engine's map, checked: each capability folder (and each leaf module) may import only the
//! modules `ARCHITECTURE.md` says it may, so its "knows nothing of" line stays true and no
//! import cycle spans two of them. An item re-exported at the crate root counts as an import of
//! the module that defines it; the root's own items (`Engine`, `Inner`, the config) are the
//! composition root, which every capability but `kinds` may name.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Module → the modules it may import (besides itself).
const ALLOWED: &[(&str, &[&str])] = &[
    ("kinds", &["caller", "error"]),
    (
        "credentials",
        &["caller", "error", "names", "kinds", "root"],
    ),
    (
        "catalog",
        &[
            "cache",
            "caller",
            "error",
            "names",
            "static_tool",
            "kinds",
            "credentials",
            "root",
        ],
    ),
    (
        "policies",
        &["cache", "caller", "error", "workspace", "root"],
    ),
    ("toolkits", &["caller", "catalog", "error", "root"]),
    (
        "executions",
        &[
            "caller",
            "error",
            "kinds",
            "catalog",
            "credentials",
            "core_tools",
            "agent_sessions",
            "database",
            "workspace",
            "root",
        ],
    ),
    ("agent_sessions", &["error", "root"]),
    (
        "core_tools",
        &[
            "cache",
            "caller",
            "error",
            "static_tool",
            "views",
            "catalog",
            "credentials",
            "policies",
            "root",
        ],
    ),
    ("caller", &[]),
    ("cache", &[]),
    ("database", &["error", "root"]),
    ("error", &[]),
    ("names", &["error"]),
    ("static_tool", &[]),
    ("views", &["credentials"]),
    ("workspace", &["caller", "error", "root"]),
];

#[test]
fn each_part_of_the_engine_imports_only_what_the_map_allows() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let root_exports = root_exports(&std::fs::read_to_string(src.join("lib.rs")).unwrap());
    let allowed: BTreeMap<&str, BTreeSet<&str>> = ALLOWED
        .iter()
        .map(|(m, deps)| (*m, deps.iter().copied().collect()))
        .collect();
    let mut seen = BTreeSet::new();
    let mut wrong = Vec::new();
    for file in rust_files(&src) {
        let relative = file.strip_prefix(&src).unwrap();
        let module = top_module(relative);
        if module == "lib" {
            continue;
        }
        seen.insert(module.clone());
        let Some(may) = allowed.get(module.as_str()) else {
            wrong.push(format!(
                "{}: module {module} is not on the map",
                relative.display()
            ));
            continue;
        };
        let text = std::fs::read_to_string(&file).unwrap();
        for name in crate_references(without_tests(&text)) {
            let target = if allowed.contains_key(name.as_str()) {
                name.clone()
            } else {
                root_exports
                    .get(&name)
                    .cloned()
                    .unwrap_or_else(|| "root".to_owned())
            };
            if target != module && !may.contains(target.as_str()) {
                wrong.push(format!(
                    "{}: imports `crate::{name}` ({target})",
                    relative.display()
                ));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "imports off the map:\n{}",
        wrong.join("\n")
    );
    for (module, _) in ALLOWED {
        assert!(
            seen.contains(*module),
            "the map names {module}, which is gone"
        );
    }
}

#[test]
fn the_map_itself_has_no_cycle() {
    fn visit<'a>(
        m: &'a str,
        map: &BTreeMap<&'a str, &'a [&'a str]>,
        path: &mut Vec<&'a str>,
        done: &mut BTreeSet<&'a str>,
    ) {
        assert!(!path.contains(&m), "cycle: {path:?} -> {m}");
        if !done.insert(m) {
            return;
        }
        path.push(m);
        for dep in map.get(m).copied().unwrap_or(&[]) {
            visit(dep, map, path, done);
        }
        path.pop();
    }
    let map: BTreeMap<&str, &[&str]> = ALLOWED.iter().copied().collect();
    for (m, _) in ALLOWED {
        visit(m, &map, &mut Vec::new(), &mut BTreeSet::new());
    }
}

fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(rust_files(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
    out
}

/// `catalog/mod.rs` → `catalog`, `caller.rs` → `caller`.
fn top_module(relative: &Path) -> String {
    let first = relative.components().next().unwrap().as_os_str();
    first.to_string_lossy().trim_end_matches(".rs").to_owned()
}

/// A file's code before its unit tests (tests may reach anywhere).
fn without_tests(text: &str) -> &str {
    text.split("#[cfg(test)]").next().unwrap_or(text)
}

/// The first path segment of every `crate::…` in `text`, `use crate::{a, b::c}` groups included.
fn crate_references(text: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let mut rest = text;
    while let Some(at) = rest.find("crate::") {
        rest = &rest[at + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let end = group.find('}').unwrap_or(group.len());
            for item in group[..end].split(',') {
                if let Some(first) = item.trim().split("::").next().filter(|s| !s.is_empty()) {
                    names.insert(first.trim().to_owned());
                }
            }
        } else {
            let ident: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            names.insert(ident);
        }
    }
    names
}

/// Items the crate root re-exports (`pub use module::…::{A, B};`), by name → defining module.
fn root_exports(lib: &str) -> BTreeMap<String, String> {
    let mut exports = BTreeMap::new();
    for statement in lib.split(';') {
        let Some(path) = statement.trim().strip_prefix("pub use ") else {
            continue;
        };
        let module = path.split("::").next().unwrap().trim().to_owned();
        let names = match path.find('{') {
            Some(open) => path[open + 1..].trim_end_matches('}').to_owned(),
            None => path.rsplit("::").next().unwrap().to_owned(),
        };
        for name in names.split(',') {
            let name = name.split(" as ").last().unwrap().trim();
            if !name.is_empty() {
                exports.insert(name.to_owned(), module.clone());
            }
        }
    }
    exports
}
