//! A bound on YAML flow nesting, checked before the YAML parser sees the text.
//!
//! libyaml (under `serde_yaml_ng`) keeps one possible simple key per open flow collection and
//! re-examines them on every token, so its time grows with the document's length times its flow
//! depth: 140,000 `[` cost 26 s of CPU before the parser's own recursion limit (128) refused them.
//! This scan is linear and stops at the first collection past the limit, so such a document is
//! refused in microseconds. Block nesting needs indentation, so its depth is bounded by the size
//! limit, and libyaml is linear there.
//!
//! The scan follows YAML's lexical rules closely enough for a bound: flow indicators count only
//! where a node may start (in block context) or anywhere in flow context, and quoted scalars,
//! comments and block scalars (`|`, `>`) are skipped.

/// Deepest flow nesting accepted; `serde_yaml_ng` refuses anything deeper than 128 levels in all
/// anyway, so no document it could read is refused here.
pub(crate) const MAX_FLOW_DEPTH: usize = 128;

/// The 1-based line of the first flow collection (`[` or `{`) that opens deeper than `limit`.
pub(crate) fn flow_depth_exceeded(text: &str, limit: usize) -> Option<usize> {
    let bytes = text.as_bytes();
    let mut depth = 0usize;
    let mut line = 1usize;
    let mut line_indent = 0usize;
    // Whether a node may start here (line start, after an indicator and whitespace).
    let mut node_start = true;
    let mut at_line_start = true;
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if at_line_start {
            let indent = bytes[i..].iter().take_while(|&&c| c == b' ').count();
            line_indent = indent;
            at_line_start = false;
            i += indent;
            continue;
        }
        match b {
            b'\n' => {
                line += 1;
                at_line_start = true;
                node_start = true;
                i += 1;
            }
            b' ' | b'\t' | b'\r' => i += 1,
            b'#' if i == 0 || matches!(bytes[i - 1], b' ' | b'\t' | b'\n' | b'\r') => {
                i = skip_to_line_end(bytes, i);
            }
            // In block context a plain scalar may hold `[` (`see [link]`); counting those
            // after whitespace too over-counts only unbalanced ones, and never lets a
            // collection hide.
            b'[' | b'{'
                if depth > 0 || node_start || (i > 0 && matches!(bytes[i - 1], b' ' | b'\t')) =>
            {
                depth += 1;
                if depth > limit {
                    return Some(line);
                }
                node_start = true;
                i += 1;
            }
            b']' | b'}' if depth > 0 => {
                depth -= 1;
                node_start = false;
                i += 1;
            }
            b',' if depth > 0 => {
                node_start = true;
                i += 1;
            }
            b'"' if node_start => {
                i = skip_double_quoted(bytes, i + 1, &mut line);
                node_start = false;
            }
            b'\'' if node_start => {
                i = skip_single_quoted(bytes, i + 1, &mut line);
                node_start = false;
            }
            b'|' | b'>' if node_start && depth == 0 => {
                i = skip_block_scalar(bytes, i, line_indent, &mut line);
                at_line_start = true;
                node_start = true;
            }
            // A tag or an anchor comes before its node: `a: !t [1]`, `b: &x {c: 1}`.
            b'!' | b'&' if node_start => {
                i += bytes[i..]
                    .iter()
                    .take_while(|&&c| {
                        !matches!(
                            c,
                            b' ' | b'\t' | b'\n' | b'\r' | b'[' | b'{' | b',' | b']' | b'}'
                        )
                    })
                    .count();
            }
            // `key: value`, `- item`, `? key`: a node may follow the indicator. In flow
            // context `{"a":[1]}` needs no space after the colon.
            b':' | b'-' | b'?' => {
                let next = bytes.get(i + 1).copied();
                let separated = matches!(next, None | Some(b' ' | b'\t' | b'\n' | b'\r'));
                node_start = separated || (b == b':' && depth > 0);
                i += 1;
            }
            _ => {
                node_start = false;
                i += 1;
            }
        }
    }
    None
}

fn skip_to_line_end(bytes: &[u8], from: usize) -> usize {
    bytes[from..]
        .iter()
        .position(|&c| c == b'\n')
        .map_or(bytes.len(), |n| from + n)
}

/// Past the closing `"` (backslash escapes), counting lines.
fn skip_double_quoted(bytes: &[u8], mut i: usize, line: &mut usize) -> usize {
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'"' => return i + 1,
            b'\n' => {
                *line += 1;
                i += 1;
            }
            _ => i += 1,
        }
    }
    bytes.len()
}

/// Past the closing `'` (`''` is an escaped quote), counting lines.
fn skip_single_quoted(bytes: &[u8], mut i: usize, line: &mut usize) -> usize {
    while i < bytes.len() {
        match bytes[i] {
            b'\'' if bytes.get(i + 1) == Some(&b'\'') => i += 2,
            b'\'' => return i + 1,
            b'\n' => {
                *line += 1;
                i += 1;
            }
            _ => i += 1,
        }
    }
    bytes.len()
}

/// Past a block scalar: the indicator's line, then every blank line or line indented more than
/// `parent_indent`. Returns the start of the first line after it.
fn skip_block_scalar(bytes: &[u8], from: usize, parent_indent: usize, line: &mut usize) -> usize {
    let mut i = skip_to_line_end(bytes, from);
    while i < bytes.len() {
        // `i` is at a newline; look at the next line.
        let start = i + 1;
        let indent = bytes[start..].iter().take_while(|&&c| c == b' ').count();
        let rest = bytes.get(start + indent).copied();
        let blank = matches!(rest, None | Some(b'\n' | b'\r'));
        if !blank && indent <= parent_indent {
            *line += 1;
            return start;
        }
        *line += 1;
        i = skip_to_line_end(bytes, start);
    }
    bytes.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn over(text: &str) -> Option<usize> {
        flow_depth_exceeded(text, 3)
    }

    #[test]
    fn counts_flow_collections_where_nodes_start() {
        assert_eq!(over("a: [[[1]]]"), None);
        assert_eq!(over("a: [[[[1]]]]"), Some(1));
        assert_eq!(over("a: {b: [{c: [1]}]}"), Some(1));
        assert_eq!(over("- [1, [2, [3]], [4]]\n- [[[5]]]"), None);
        assert_eq!(over("x: 1\ny:\n  - [[[[\n"), Some(3));
        // JSON is flow YAML: no space after the colon.
        assert_eq!(over(r#"{"a":[{"b":[1]}]}"#), Some(1));
        assert_eq!(over(r#"{"a":[{"b":1}]}"#), None);
    }

    #[test]
    fn brackets_inside_scalars_comments_and_block_text_do_not_count() {
        assert_eq!(over("a: see[[[[this]]]] link"), None);
        assert_eq!(over("a: see [x] and [[y]] link"), None);
        assert_eq!(over("a: \"[[[[[\"\nb: '[[[[ it''s [[['"), None);
        assert_eq!(over("a: 1 # [[[[[[\n# {{{{{{\nb: 2"), None);
        assert_eq!(
            over("d: |\n  [[[[[ markdown\n\n  {{{{{\ne: [[[1]]]\n"),
            None
        );
        assert_eq!(over("d: >\n  [[[[[\ne: [[[[1]]]]\n"), Some(3));
        assert_eq!(over("a: [\"]]]]\", [[[1]]]]"), Some(1));
        // Tags and anchors do not hide a collection.
        assert_eq!(over("a: !t [[[[1]]]]"), Some(1));
        assert_eq!(over("a: &x {b: [[[1]]]}"), Some(1));
        assert_eq!(over("a: x [[[[1]]]]"), Some(1));
    }

    #[test]
    fn stops_at_the_first_collection_past_the_limit() {
        let bomb = format!("a: {}", "[".repeat(1_000_000));
        assert_eq!(flow_depth_exceeded(&bomb, MAX_FLOW_DEPTH), Some(1));
    }
}
