//! Real-world specs installed from npm by `tests/fixtures/install.sh`: every
//! `@readme/oas-examples` document (Swagger 2.0, OpenAPI 3.0 and 3.1; JSON and YAML) must parse
//! and extract, and GitHub's full REST description (`@octokit/openapi`) must import; the GitHub
//! import prints its time and peak-RSS growth for BENCHMARKS.md.

use std::path::{Path, PathBuf};
use std::time::Instant;

use executor_openapi::{derive_auth_methods, extract, parse_spec, preview};

fn fixtures_dir() -> PathBuf {
    let dir = std::env::var_os("OPENAPI_FIXTURES_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/node_modules")
        });
    assert!(
        dir.join("@readme/oas-examples").is_dir() && dir.join("@octokit/openapi").is_dir(),
        "OpenAPI fixtures are missing from {}: run crates/executor-openapi/tests/fixtures/install.sh \
         (npm install of @readme/oas-examples and @octokit/openapi) or set OPENAPI_FIXTURES_DIR",
        dir.display()
    );
    dir
}

fn spec_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            spec_files(&p, out);
        } else if matches!(
            p.extension().and_then(|x| x.to_str()),
            Some("json" | "yaml" | "yml")
        ) {
            out.push(p);
        }
    }
}

/// The two tests run one at a time so the GitHub memory figure is not disturbed.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[test]
fn readme_oas_examples_all_import() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let root = fixtures_dir().join("@readme/oas-examples");
    let mut total_tools = 0;
    let mut counts = Vec::new();
    for version in ["2.0", "3.0", "3.1"] {
        let mut files = Vec::new();
        spec_files(&root.join(version), &mut files);
        files.sort();
        assert!(!files.is_empty(), "no specs under {version}");
        let mut per_version = 0;
        for f in &files {
            let text = std::fs::read_to_string(f).unwrap();
            let spec = match parse_spec(&text) {
                Ok(s) => s,
                Err(e) => panic!("{} did not parse: {e}", f.display()),
            };
            let ex = extract(&spec);
            let _ = derive_auth_methods(&spec);
            let _ = preview(&spec);
            assert_eq!(
                ex.tools.len() + ex.failures.len(),
                spec.operations.len() + spec.failures.len(),
                "{}",
                f.display()
            );
            if !ex.failures.is_empty() {
                println!(
                    "{}: {} failures: {:?}",
                    f.display(),
                    ex.failures.len(),
                    ex.failures
                );
            }
            let mut names: Vec<&str> = ex.tools.iter().map(|t| t.name.as_str()).collect();
            names.sort();
            names.dedup();
            assert_eq!(
                names.len(),
                ex.tools.len(),
                "unique names in {}",
                f.display()
            );
            for t in &ex.tools {
                assert_eq!(
                    t.input_schema["type"],
                    "object",
                    "{} {}",
                    f.display(),
                    t.name
                );
                assert!(t.binding.is_object(), "{} {}", f.display(), t.name);
                // Every shared reference in a tool schema points at a definition that exists.
                check_refs(&t.input_schema, &ex.definitions, f, &t.name);
                if let Some(o) = &t.output_schema {
                    check_refs(o, &ex.definitions, f, &t.name);
                }
            }
            per_version += 1;
            total_tools += ex.tools.len();
        }
        counts.push((version, per_version));
    }
    println!("oas-examples imported: {counts:?}, {total_tools} tools");
}

fn check_refs(
    v: &serde_json::Value,
    defs: &serde_json::Map<String, serde_json::Value>,
    file: &Path,
    tool: &str,
) {
    match v {
        serde_json::Value::Object(o) => {
            if let Some(serde_json::Value::String(r)) = o.get("$ref") {
                let name = r
                    .strip_prefix("#/$defs/")
                    .unwrap_or_else(|| panic!("{} {tool}: foreign ref {r}", file.display()));
                let first = name
                    .split('/')
                    .next()
                    .unwrap()
                    .replace("~1", "/")
                    .replace("~0", "~");
                let first = percent_decode(&first);
                assert!(
                    defs.contains_key(&first),
                    "{} {tool}: dangling ref {r}",
                    file.display()
                );
            }
            for (k, c) in o {
                if !matches!(
                    k.as_str(),
                    "example" | "examples" | "default" | "enum" | "const"
                ) {
                    check_refs(c, defs, file, tool);
                }
            }
        }
        serde_json::Value::Array(a) => a.iter().for_each(|c| check_refs(c, defs, file, tool)),
        _ => {}
    }
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%'
            && i + 2 < b.len()
            && let Some(x) = std::str::from_utf8(&b[i + 1..i + 3])
                .ok()
                .and_then(|h| u8::from_str_radix(h, 16).ok())
        {
            out.push(x);
            i += 3;
            continue;
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn rss_kib(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

#[test]
fn github_rest_spec_imports() {
    let path = fixtures_dir().join("@octokit/openapi/generated/api.github.com.json");
    let text = std::fs::read_to_string(&path).unwrap();
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    // Reset the peak-RSS mark (Linux ≥ 4.0) so VmHWM measures this import only.
    let _ = std::fs::write("/proc/self/clear_refs", "5");
    let rss_before = rss_kib("VmRSS:");
    let hwm_before = rss_kib("VmHWM:");
    let started = Instant::now();
    let spec = parse_spec(&text).expect("GitHub's spec parses");
    let parsed = started.elapsed();
    let ex = extract(&spec);
    let total = started.elapsed();
    let methods = derive_auth_methods(&spec);
    let hwm_after = rss_kib("VmHWM:");
    println!(
        "BENCH github import: {} bytes, {} operations, {} tools, {} definitions, {} failures; \
         parse {:.0} ms, parse+extract {:.0} ms; peak RSS growth {:.1} MiB (RSS before {:.1} MiB, \
         VmHWM {:.1} → {:.1} MiB)",
        text.len(),
        spec.operations.len(),
        ex.tools.len(),
        ex.definitions.len(),
        ex.failures.len(),
        parsed.as_secs_f64() * 1000.0,
        total.as_secs_f64() * 1000.0,
        hwm_after.saturating_sub(rss_before) as f64 / 1024.0,
        rss_before as f64 / 1024.0,
        hwm_before as f64 / 1024.0,
        hwm_after as f64 / 1024.0,
    );
    assert!(ex.tools.len() >= 900, "{} tools", ex.tools.len());
    assert!(ex.failures.is_empty(), "{:?}", ex.failures);
    let names: std::collections::HashSet<&str> = ex.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names.len(), ex.tools.len());
    for expected in [
        "repos.get",
        "issues.create",
        "repos.getContent",
        "pulls.list",
    ] {
        assert!(names.contains(expected), "missing {expected}");
    }
    let create = ex.tools.iter().find(|t| t.name == "issues.create").unwrap();
    assert!(create.requires_approval);
    assert_eq!(
        create.input_schema["required"],
        serde_json::json!(["owner", "repo", "body"])
    );
    assert!(!methods.is_empty() || spec.security_schemes.is_empty());
}
