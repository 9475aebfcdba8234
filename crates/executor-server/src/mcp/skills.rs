//! Texts agents read: the `execute` description and the `skills` tool.

/// Bullets listed in the `execute` description before `- ... N more`.
const MAX_LISTED: usize = 50;

pub(crate) const EXECUTE_SKILL: &str = "execute";

const HINT: &str = "Before writing code, call `skills({ name: \"execute\" })` for the workflow on how to use this tool.";

/// The `execute` tool description for the given connected integration slugs (any order, may repeat).
pub(crate) fn execute_description(slugs: &[String]) -> String {
    let mut out = format!("Execute TypeScript in a sandboxed runtime.\n\n{HINT}");
    let slugs = distinct_sorted(slugs);
    if !slugs.is_empty() {
        out.push_str(
            "\n\n## Available integrations\nIntegrations you have connected. Their tools live under `tools.<integration>.…`.",
        );
        for slug in slugs.iter().take(MAX_LISTED) {
            out.push_str(&format!("\n- `{slug}`"));
        }
        if slugs.len() > MAX_LISTED {
            out.push_str(&format!("\n- ... {} more", slugs.len() - MAX_LISTED));
        }
    }
    out
}

fn distinct_sorted(slugs: &[String]) -> Vec<String> {
    let mut slugs = slugs.to_vec();
    slugs.sort();
    slugs.dedup();
    slugs
}

/// `skills({})`: the index.
pub(crate) fn index() -> String {
    format!(
        "Available skills. Fetch one with `skills({{ name: \"<name>\" }})`.\n- `{EXECUTE_SKILL}`: how to write code for the execute tool (finding tools, calling them, handling results and approvals)."
    )
}

/// `skills({name:"execute"})`: the how-to, with the live integration inventory appended.
pub(crate) fn execute_skill(slugs: &[String]) -> String {
    let mut out = String::from(EXECUTE_HOWTO);
    out.push_str("\n\n## Connected integrations right now\n");
    let slugs = distinct_sorted(slugs);
    if slugs.is_empty() {
        out.push_str(
            "None yet. A person adds integrations and connections in Executor (web UI or HTTP API); \
             built-in tools such as `tools.search` still work.",
        );
    } else {
        for slug in &slugs {
            out.push_str(&format!(
                "- `{slug}`: enumerate with `tools.search({{ namespace: \"{slug}\" }})`\n"
            ));
        }
    }
    out
}

const EXECUTE_HOWTO: &str = r#"# Using the execute tool

`execute({ code })` runs your TypeScript/JavaScript in a sandbox and returns what the code
`return`s. Every integration Executor knows is reachable from the code through the global
`tools` object, so one execute call can search, call several tools, and combine their results.

## Workflow: search → describe → call
1. Find tools:
   `return await tools.search({ query: "create issue", limit: 12 })`
   → `{ items: [{ path, name, description, integration, score }], total, hasMore, nextOffset }`.
   List every tool of one integration with `tools.search({ namespace: "<integration>" })`.
   Page with `offset`: `tools.search({ query, offset: page.nextOffset })` while `hasMore` is true.
   `tools.executor.integrations.list({})` lists the integrations and their tool counts.
2. Read the signature before calling a tool you have not used yet:
   `return await tools.describe.tool({ path: "github.org.main.create_issue" })`
   → `{ path, name, description, inputTypeScript, outputTypeScript, typeScriptDefinitions }`.
3. Call it. A tool path is `tools.<integration>.<owner>.<connection>.<tool>`; pass ONE argument
   object:
   ```ts
   const r = await tools.github.org.main.create_issue({ title: "Bug", body: "…" });
   if (!r.ok) return r.error;
   return r.data;
   ```

## Results are a union, not exceptions
Every tool call resolves to
`{ ok: true, data, http?: { status, headers } } | { ok: false, error: { code, message, status?, details?, retryable? } }`.
- Always check `r.ok` before using `r.data`.
- On `ok: false` read `error.code` and `error.message`: `tool_not_found` carries
  `details.suggestions` (paths to try instead); `invalid_tool_arguments` means fix the arguments
  (describe the tool again); authentication codes (`connection_value_missing`,
  `connection_rejected`, …) need a person to fix the connection — tell the user, do not retry in a
  loop. Retry only when `retryable` is true.
- `http` (when present) is the upstream HTTP status and headers of the call.
- A call throws (reject, catchable with try/catch) only for declined approvals, invalid arguments
  to built-ins, and internal failures (`Internal tool error [id]`).

## Approvals
Destructive tools need a person's approval. The execution then pauses and execute returns
`status: "waiting_for_interaction"` with an `executionId`. Show the user the message, ask, then
call `resume({ executionId, action: "accept" | "decline" | "cancel" })` (when this server offers a
`resume` tool; some clients ask the user directly instead). A declined call throws inside your code.

## The sandbox
- TypeScript is accepted: types are stripped (no `enum`, no decorators). Top-level `await` and
  `return` work; the returned value is the result (strings verbatim, anything else as JSON).
  A script without `return` has no result.
- `tools` is a lazy proxy: it is NOT enumerable (`Object.keys(tools)`, spread and `for…in` throw).
  Discover tools with `tools.search`, never by inspecting `tools`.
- `console.log/info/warn/error` lines are returned as logs next to the result.
- `emit(value)` sends output straight to the user: a string, any JSON value, an MCP content block,
  or a file `{ _tag: "ToolFile", name, mimeType, encoding: "base64", data, byteLength }`.
- There is no network: `fetch` is disabled, as are timers and the filesystem. All IO goes
  through `tools`.
- Results and tool arguments must be JSON-serialisable. Long results are truncated at 30,000
  characters: return only what you need (filter and summarise inside the code).
- Each execution has a time budget; time spent waiting on tool calls does not count.
"#;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn description_lists_distinct_sorted_slugs_with_overflow() {
        let none = execute_description(&[]);
        assert!(
            none.starts_with("Execute TypeScript in a sandboxed runtime.\n\nBefore writing code")
        );
        assert!(!none.contains("## Available integrations"));

        let some = execute_description(&["b".into(), "a".into(), "b".into()]);
        assert!(some.ends_with("\n- `a`\n- `b`"), "{some}");

        let many: Vec<String> = (0..53).map(|i| format!("s{i:02}")).collect();
        let text = execute_description(&many);
        assert!(text.contains("- `s49`") && !text.contains("- `s50`"));
        assert!(text.ends_with("- ... 3 more"), "{text}");
    }
}
