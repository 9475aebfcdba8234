//! Code recovery (spec §4.1) and TypeScript stripping, with a position map back to the agent's text.
//!
//! Pipeline: `code` → first fenced block (`body`) → recovery edit (`recovered`) →
//! `async function __executor_main__() {\n<recovered>\n}` (`wrapped`) → oxc parse/semantic/transform →
//! codegen (+ source map) → `js`, evaluated as a strict global script whose completion value is the
//! main promise. Every position reported to the agent is mapped back through each of those steps.

use std::path::{Path, PathBuf};

use oxc::allocator::Allocator;
use oxc::ast::ast::{ExportDefaultDeclarationKind, Expression, Program, Statement};
use oxc::codegen::{Codegen, CodegenOptions};
use oxc::diagnostics::OxcDiagnostic;
use oxc::parser::{ParseOptions, Parser};
use oxc::semantic::SemanticBuilder;
use oxc::span::{GetSpan, SourceType};
use oxc::transformer::{TransformOptions, Transformer};

/// Name of the function that wraps the agent's body.
pub(crate) const MAIN_FN: &str = "__executor_main__";
const WRAP_PREFIX: &str = "async function __executor_main__() {\n";
const WRAP_SUFFIX: &str = "\n}";

/// Agent code after recovery and TypeScript stripping, ready to evaluate.
#[derive(Debug, Clone)]
pub struct PreparedCode {
    /// The JavaScript to evaluate (strict global script; its completion value is the main promise).
    js: String,
    /// The recovered (still TypeScript) body, before wrapping.
    recovered: String,
    map: PositionMap,
}

impl PreparedCode {
    /// The JavaScript that is evaluated: a strict script whose completion value is the main promise.
    pub fn js(&self) -> &str {
        &self.js
    }

    /// The agent's body after fence extraction and recovery (still TypeScript).
    pub fn recovered_source(&self) -> &str {
        &self.recovered
    }

    /// Maps a 1-based `(line, column)` in [`PreparedCode::js`] to a 1-based `(line, column)` in the
    /// code that was submitted to [`prepare`].
    pub fn original_position(&self, line: u32, column: u32) -> Option<(u32, u32)> {
        self.map.js_to_original(line, column)
    }
}

/// Largest accepted submission.
pub(crate) const MAX_CODE_BYTES: usize = 256 * 1024;

/// Native stack oxc may need per byte of code. Its parser, semantic pass, transformer and codegen
/// recurse once per level of nesting, and code nests at most one level per byte: measured on a
/// release build, the worst construct (`(` or `[` left open) needs about 1.3 KiB a level (178,000
/// open `[` overflowed the 256 MiB stack of an `executor-io` thread); this leaves twice that.
const STACK_PER_CODE_BYTE: usize = 3 * 1024;

/// Runs `work` (oxc's stages over `len` bytes of code) where the stack can hold their deepest
/// recursion: on this thread when enough of its stack is left, else on a stack allocated for the
/// call (virtual memory, committed only as far as the recursion reaches, and freed after), so no
/// nesting within the size cap can overflow a thread.
fn on_a_deep_enough_stack<R>(len: usize, work: impl FnOnce() -> R) -> R {
    let needed = len.saturating_mul(STACK_PER_CODE_BYTE) + 1024 * 1024;
    stacker::maybe_grow(needed, needed, work)
}

/// Recovers the agent's program from `code` (§4.1) and strips TypeScript.
///
/// Errors are `SyntaxError: <message> (line L, column C)` with positions in `code`. Safe on any
/// thread: deeply nested code is parsed on a stack sized for it.
pub fn prepare(code: &str) -> Result<PreparedCode, String> {
    if code.len() > MAX_CODE_BYTES {
        return Err(format!(
            "Code is too large: {} bytes (the limit is {} KiB)",
            code.len(),
            MAX_CODE_BYTES / 1024
        ));
    }
    // Recovery parses too: the whole pipeline runs where the stack suffices.
    on_a_deep_enough_stack(code.len(), || prepare_sized(code))
}

/// [`prepare`] of code under the size cap, on a stack that holds its nesting.
fn prepare_sized(code: &str) -> Result<PreparedCode, String> {
    let (body_start, body_end) = extract_fenced(code).unwrap_or((0, code.len()));
    let body = &code[body_start..body_end];
    let edit = recover(body);
    let recovered = match &edit {
        Some(e) => e.apply(body),
        None => body.to_string(),
    };
    let wrapped = format!("{WRAP_PREFIX}{recovered}{WRAP_SUFFIX}");

    let mut map = PositionMap {
        original: code.to_string(),
        body_start,
        body_end,
        edit,
        recovered_len: recovered.len(),
        wrapped,
        js_tokens: Vec::new(),
        first_line_shift: 0,
    };

    let (js, tokens, first_line_shift) = strip_types(&map.wrapped).map_err(|diag| {
        let offset = diag.labels.first().map(|label| label.offset() as usize);
        let message = diag.message.to_string();
        match offset {
            Some(offset) => {
                let (line, col) = map.wrapped_offset_to_original(offset);
                format!("SyntaxError: {message} (line {line}, column {col})")
            }
            None => format!("SyntaxError: {message}"),
        }
    })?;
    map.js_tokens = tokens;
    map.first_line_shift = first_line_shift;
    Ok(PreparedCode { js, recovered, map })
}

/// Byte range of the body of the first fenced code block, if any.
///
/// Prefers the first block tagged ts/typescript/js/javascript (or untagged); otherwise the first block.
fn extract_fenced(code: &str) -> Option<(usize, usize)> {
    let mut blocks = Vec::new();
    let mut open: Option<(usize, bool)> = None;
    let mut pos = 0;
    for line in code.split_inclusive('\n') {
        let line_start = pos;
        pos += line.len();
        let trimmed = line.trim();
        match open {
            None => {
                if let Some(info) = trimmed.strip_prefix("```") {
                    let lang = info.trim().to_ascii_lowercase();
                    let is_code = matches!(
                        lang.as_str(),
                        "" | "ts"
                            | "typescript"
                            | "js"
                            | "javascript"
                            | "tsx"
                            | "jsx"
                            | "mjs"
                            | "mts"
                    );
                    open = Some((pos, is_code));
                }
            }
            Some((start, is_code)) => {
                if trimmed.starts_with("```") {
                    blocks.push((start, line_start, is_code));
                    open = None;
                }
            }
        }
    }
    if let Some((start, is_code)) = open {
        blocks.push((start, code.len(), is_code));
    }
    blocks
        .iter()
        .find(|b| b.2)
        .or(blocks.first())
        .map(|&(s, e, _)| (s, e))
}

/// A single textual edit: `body[..a] + prefix + body[b..c] + suffix + body[c..]`.
#[derive(Debug, Clone)]
struct Edit {
    a: usize,
    b: usize,
    c: usize,
    prefix: String,
    suffix: String,
}

impl Edit {
    fn apply(&self, body: &str) -> String {
        let mut s = String::with_capacity(body.len() + self.prefix.len() + self.suffix.len());
        s.push_str(&body[..self.a]);
        s.push_str(&self.prefix);
        s.push_str(&body[self.b..self.c]);
        s.push_str(&self.suffix);
        s.push_str(&body[self.c..]);
        s
    }

    /// Maps an offset in the recovered text back to an offset in the body.
    fn to_body(&self, rec: usize) -> usize {
        let p = self.prefix.len();
        let kept = self.c - self.b;
        let s = self.suffix.len();
        if rec < self.a {
            rec
        } else if rec < self.a + p {
            self.b
        } else if rec < self.a + p + kept {
            self.b + (rec - self.a - p)
        } else if rec < self.a + p + kept + s {
            // Inside the appended call: point at the end of the kept code.
            self.c.saturating_sub(1).max(self.b)
        } else {
            self.c + (rec - self.a - p - kept - s)
        }
    }
}

/// Decides how to turn the agent's text into a function body (spec §4.1), using oxc's AST.
fn recover(body: &str) -> Option<Edit> {
    let allocator = Allocator::default();
    let options = ParseOptions {
        allow_return_outside_function: true,
        ..ParseOptions::default()
    };
    let ret = Parser::new(&allocator, body, SourceType::ts().with_module(true))
        .with_options(options)
        .parse();
    if ret.panicked || ret.diagnostics.has_errors() {
        return None;
    }
    recover_program(&ret.program)
}

fn is_function_like(expr: &Expression<'_>) -> bool {
    matches!(
        expr.get_inner_expression(),
        Expression::ArrowFunctionExpression(_) | Expression::FunctionExpression(_)
    )
}

/// `(async () => { ... })()`: an immediately invoked function, whose promise is awaited and returned.
fn is_iife(expr: &Expression<'_>) -> bool {
    match expr.get_inner_expression() {
        Expression::CallExpression(call) => is_function_like(&call.callee),
        Expression::AwaitExpression(inner) => is_iife(&inner.argument),
        _ => false,
    }
}

fn invoke(a: usize, b: usize, c: usize) -> Edit {
    Edit {
        a,
        b,
        c,
        prefix: "return await (".into(),
        suffix: ")()".into(),
    }
}

fn recover_program(program: &Program<'_>) -> Option<Edit> {
    let last = program.body.last()?;
    let single = program.body.len() == 1;
    match last {
        Statement::ExpressionStatement(stmt) if single && is_function_like(&stmt.expression) => {
            let span = stmt.expression.span();
            let (s, e) = (span.start as usize, span.end as usize);
            Some(invoke(s, s, e))
        }
        Statement::ExpressionStatement(stmt) if single && is_iife(&stmt.expression) => {
            let span = stmt.expression.span();
            let (s, e) = (span.start as usize, span.end as usize);
            Some(Edit {
                a: s,
                b: s,
                c: e,
                prefix: "return await (".into(),
                suffix: ")".into(),
            })
        }
        Statement::FunctionDeclaration(func) if single && func.body.is_some() => {
            let name = func.id.as_ref()?.name.as_str();
            let end = func.span.end as usize;
            Some(Edit {
                a: end,
                b: end,
                c: end,
                prefix: String::new(),
                suffix: format!("\nreturn await {name}();"),
            })
        }
        Statement::ExportDefaultDeclaration(decl) => {
            let a = decl.span.start as usize;
            match &decl.declaration {
                ExportDefaultDeclarationKind::FunctionDeclaration(func) => {
                    let (b, c) = (func.span.start as usize, func.span.end as usize);
                    match &func.id {
                        Some(id) => Some(Edit {
                            a,
                            b,
                            c,
                            prefix: String::new(),
                            suffix: format!("\nreturn await {}();", id.name.as_str()),
                        }),
                        None => Some(invoke(a, b, c)),
                    }
                }
                ExportDefaultDeclarationKind::ClassDeclaration(_)
                | ExportDefaultDeclarationKind::TSInterfaceDeclaration(_) => None,
                kind => {
                    let expr = kind.as_expression()?;
                    let span = expr.span();
                    let (b, c) = (span.start as usize, span.end as usize);
                    if is_function_like(expr) {
                        Some(invoke(a, b, c))
                    } else {
                        Some(Edit {
                            a,
                            b,
                            c,
                            prefix: "return (".into(),
                            suffix: ")".into(),
                        })
                    }
                }
            }
        }
        _ => None,
    }
}

type JsTokens = Vec<Vec<(u32, u32, u32)>>;

/// Parses the wrapped source as TypeScript, strips types and generates JavaScript.
///
/// Returns the script, source-map tokens per generated line (`(dst_col, src_line, src_col)`),
/// and the column shift added to the first generated line.
fn strip_types(wrapped: &str) -> Result<(String, JsTokens, u32), OxcDiagnostic> {
    let allocator = Allocator::default();
    let source_type = SourceType::ts();
    let ret = Parser::new(&allocator, wrapped, source_type).parse();
    if let Some(err) = ret.diagnostics.errors().next() {
        return Err(err.clone());
    }
    if ret.panicked {
        return Err(OxcDiagnostic::error("Unexpected token"));
    }
    let mut program = ret.program;
    let sem = SemanticBuilder::new()
        .with_check_syntax_error(true)
        .with_enum_eval(true)
        .build(&program);
    if let Some(err) = sem.diagnostics.errors().next() {
        return Err(err.clone());
    }
    let scoping = sem.semantic.into_scoping();
    let options = TransformOptions::default();
    let tr = Transformer::new(&allocator, Path::new("agent.ts"), &options)
        .build_with_scoping(scoping, &mut program);
    if let Some(err) = tr.diagnostics.errors().next() {
        return Err(err.clone());
    }
    let single_statement = program.body.len() == 1;
    let out = Codegen::new()
        .with_options(CodegenOptions {
            source_map_path: Some(PathBuf::from("agent.ts")),
            // No indentation: each line was indented by its depth, so the output grew with the
            // square of the nesting (48,000 levels made one 3.1 GB allocation, issue #39).
            // Positions reach the agent through the source map, never the generated text.
            indent_width: 0,
            ..CodegenOptions::default()
        })
        .build(&program);

    let mut tokens: JsTokens = Vec::new();
    if let Some(map) = &out.map {
        for t in map.get_tokens() {
            let line = t.get_dst_line() as usize;
            if tokens.len() <= line {
                tokens.resize_with(line + 1, Vec::new);
            }
            tokens[line].push((t.get_dst_col(), t.get_src_line(), t.get_src_col()));
        }
        for line in &mut tokens {
            line.sort_unstable_by_key(|t| t.0);
        }
    }

    let code = out.code;
    if single_statement && code.trim_start().starts_with("async function") {
        // A named function expression: no global binding for the wrapper.
        Ok((format!("({})()", code.trim_end()), tokens, 1))
    } else {
        Ok((format!("{code}\n{MAIN_FN}();"), tokens, 0))
    }
}

#[derive(Debug, Clone)]
struct PositionMap {
    original: String,
    body_start: usize,
    body_end: usize,
    edit: Option<Edit>,
    recovered_len: usize,
    wrapped: String,
    js_tokens: JsTokens,
    first_line_shift: u32,
}

impl PositionMap {
    /// Byte offset in `wrapped` → 1-based (line, column) in the original submitted code.
    fn wrapped_offset_to_original(&self, offset: usize) -> (u32, u32) {
        let rec = offset
            .saturating_sub(WRAP_PREFIX.len())
            .min(self.recovered_len);
        let body_off = match &self.edit {
            Some(edit) => edit.to_body(rec),
            None => rec,
        };
        let mut code_off = (self.body_start + body_off).min(self.body_end);
        // An error at the very end (e.g. "expected `}`") would otherwise land on the closing
        // fence or after a trailing newline; keep it on the last line of the agent's code.
        let body = &self.original[self.body_start..code_off];
        if code_off == self.body_end && body.ends_with('\n') {
            code_off -= 1;
        }
        while !self.original.is_char_boundary(code_off) {
            code_off -= 1;
        }
        let before = &self.original[..code_off];
        let line = before.matches('\n').count() as u32 + 1;
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        let col = before[line_start..].chars().count() as u32 + 1;
        (line, col)
    }

    /// 0-based (line, UTF-16 column) in `wrapped` → byte offset.
    fn wrapped_position_to_offset(&self, line: u32, col: u32) -> usize {
        let mut offset = 0;
        for (i, l) in self.wrapped.split_inclusive('\n').enumerate() {
            if i == line as usize {
                let mut units = 0;
                for (idx, ch) in l.char_indices() {
                    if units >= col {
                        return offset + idx;
                    }
                    units += ch.len_utf16() as u32;
                }
                return offset + l.len();
            }
            offset += l.len();
        }
        self.wrapped.len()
    }

    /// 1-based (line, column) in the evaluated JS → 1-based (line, column) in the original code.
    fn js_to_original(&self, line: u32, col: u32) -> Option<(u32, u32)> {
        let dst_line = line.checked_sub(1)?;
        let mut dst_col = col.saturating_sub(1);
        if dst_line == 0 {
            dst_col = dst_col.saturating_sub(self.first_line_shift);
        }
        let tokens = self.js_tokens.get(dst_line as usize)?;
        let idx = tokens.partition_point(|t| t.0 <= dst_col);
        let token = if idx == 0 {
            tokens.first()?
        } else {
            &tokens[idx - 1]
        };
        let offset = self.wrapped_position_to_offset(token.1, token.2);
        Some(self.wrapped_offset_to_original(offset))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(code: &str) -> String {
        prepare(code).unwrap().recovered_source().to_string()
    }

    #[test]
    fn plain_code_is_kept() {
        assert_eq!(rec("return 1"), "return 1");
        assert_eq!(rec("const x = 1;\nreturn x;"), "const x = 1;\nreturn x;");
    }

    #[test]
    fn fenced_block_is_extracted() {
        let code = "Here you go:\n```ts\nconst x: number = 1;\nreturn x;\n```\nthanks";
        assert_eq!(rec(code), "const x: number = 1;\nreturn x;\n");
        let code = "```\nreturn 2\n```";
        assert_eq!(rec(code), "return 2\n");
        // Unterminated fence: take the rest.
        assert_eq!(rec("```js\nreturn 3"), "return 3");
        // Prefer a code block over a json block.
        let code = "```json\n{}\n```\n```typescript\nreturn 4\n```";
        assert_eq!(rec(code), "return 4\n");
    }

    #[test]
    fn arrow_and_function_expressions_are_invoked() {
        assert_eq!(rec("async () => 1"), "return await (async () => 1)()");
        assert_eq!(rec("(() => 2);"), "return await ((() => 2))();");
        assert_eq!(
            rec("(async () => 1) as any"),
            "return await ((async () => 1) as any)()"
        );
        assert_eq!(
            rec("(async function () { return 1 }) satisfies unknown"),
            "return await ((async function () { return 1 }) satisfies unknown)()"
        );
    }

    #[test]
    fn immediately_invoked_functions_are_returned() {
        assert_eq!(
            rec("(async () => { return 1 })();"),
            "return await ((async () => { return 1 })());"
        );
        assert_eq!(
            rec("await (async function () { return 1 })()"),
            "return await (await (async function () { return 1 })())"
        );
        // Other single calls are left alone.
        assert_eq!(rec("main()"), "main()");
    }

    #[test]
    fn named_function_declaration_is_called() {
        assert_eq!(
            rec("async function main() { return 1 }"),
            "async function main() { return 1 }\nreturn await main();"
        );
    }

    #[test]
    fn export_default_forms() {
        assert_eq!(rec("export default 1 + 2"), "return (1 + 2)");
        assert_eq!(
            rec("export default async () => 5;"),
            "return await (async () => 5)();"
        );
        assert_eq!(
            rec("export default async function () { return 6 }"),
            "return await (async function () { return 6 })()"
        );
        assert_eq!(
            rec("export default async function run() { return 7 }"),
            "async function run() { return 7 }\nreturn await run();"
        );
        assert_eq!(
            rec("const a = 1;\nexport default { a }"),
            "const a = 1;\nreturn ({ a })"
        );
    }

    #[test]
    fn unparsable_code_is_kept_as_is_and_reports_position() {
        let err = prepare("const a = 1;\nconst x: = 1;").unwrap_err();
        assert!(err.starts_with("SyntaxError: "), "{err}");
        assert!(err.ends_with("(line 2, column 10)"), "{err}");
    }

    #[test]
    fn syntax_error_position_accounts_for_fence() {
        let code = "Sure:\n\n```ts\nconst a = 1;\nlet b = (;\n```\n";
        let err = prepare(code).unwrap_err();
        assert!(err.ends_with("(line 5, column 10)"), "{err}");
    }

    #[test]
    fn oversized_code_is_rejected() {
        let code = format!("return 1;{}", " ".repeat(MAX_CODE_BYTES));
        assert!(prepare(&code).unwrap_err().starts_with("Code is too large"));
    }

    /// Nesting up to the size cap is an error value on any thread, not a stack overflow that
    /// aborts the process (issue #17: 178,000 open `[` killed the server).
    #[test]
    fn deep_nesting_is_an_error_on_a_small_stack() {
        let bombs = [
            format!("return {}", "[".repeat(178_000)),
            format!("return {}", "(".repeat(255_000)),
            format!("return {}1{}", "[".repeat(120_000), "]".repeat(120_000)),
            format!("return {}", "{a:".repeat(85_000)),
            format!("return {}", "a=>".repeat(85_000)),
            format!("let x: {}", "A<".repeat(128_000)),
            format!("return {}1", "!".repeat(250_000)),
        ];
        for code in bombs {
            let outcome = std::thread::Builder::new()
                .stack_size(2 * 1024 * 1024)
                .spawn(move || prepare(&code).map(|p| p.js().len()))
                .unwrap()
                .join()
                .expect("prepare did not return");
            if let Err(e) = outcome {
                assert!(e.starts_with("SyntaxError"), "{e}");
            }
        }
    }

    #[test]
    fn typescript_is_stripped() {
        let p = prepare(
            "interface A { x: number }\ntype B = string;\nenum C { X = 1 }\nconst a = {x: 1} as A;\nreturn a!.x satisfies number;",
        )
        .unwrap();
        assert!(!p.js().contains("interface"), "{}", p.js());
        assert!(!p.js().contains("satisfies"), "{}", p.js());
    }

    #[test]
    fn edit_maps_offsets_back() {
        let body = "foo\nexport default async () => bar";
        let e = recover(body).unwrap();
        let r = e.apply(body);
        let in_rec = r.find("bar").unwrap();
        assert_eq!(e.to_body(in_rec), body.find("bar").unwrap());
        assert_eq!(e.to_body(1), 1);
    }
}
