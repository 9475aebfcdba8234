//! RFC 6902 JSON Patch, for an integration's `specOverrides`: fix a vendor's spec (a wrong
//! server, a missing parameter) without editing the document, and re-apply on every update.

use serde_json::Value;

use crate::OpenApiError;

/// Applies every operation in order. The document is left partly patched on error; callers
/// discard it.
pub(crate) fn apply(doc: &mut Value, ops: &Value) -> Result<(), OpenApiError> {
    let Value::Array(ops) = ops else {
        return Err(fail(
            0,
            "",
            "",
            "specOverrides must be an array of JSON Patch operations.",
        ));
    };
    for (index, op) in ops.iter().enumerate() {
        let name = op.get("op").and_then(Value::as_str).unwrap_or("");
        let path = op.get("path").and_then(Value::as_str).unwrap_or("");
        apply_one(doc, op, name, path).map_err(|m| fail(index, name, path, &m))?;
    }
    Ok(())
}

fn fail(index: usize, op: &str, path: &str, message: &str) -> OpenApiError {
    OpenApiError::Override {
        operation_index: index,
        operation: op.to_owned(),
        path: path.to_owned(),
        message: if op.is_empty() {
            message.to_owned()
        } else {
            format!("specOverrides[{index}] ({op} {path}): {message}")
        },
    }
}

fn apply_one(doc: &mut Value, op: &Value, name: &str, path: &str) -> Result<(), String> {
    let value = || {
        op.get("value")
            .cloned()
            .ok_or_else(|| "the operation has no \"value\".".to_owned())
    };
    let from = || {
        op.get("from")
            .and_then(Value::as_str)
            .ok_or_else(|| "the operation has no \"from\".".to_owned())
    };
    match name {
        "add" => add(doc, path, value()?),
        "remove" => remove(doc, path).map(drop),
        "replace" => {
            let v = value()?;
            *pointer_mut(doc, path)? = v;
            Ok(())
        }
        "move" => {
            let from = from()?;
            if path.starts_with(&format!("{from}/")) {
                return Err("a value cannot be moved into itself.".to_owned());
            }
            let v = remove(doc, from)?;
            add(doc, path, v)
        }
        "copy" => {
            let v = pointer(doc, from()?)?.clone();
            add(doc, path, v)
        }
        "test" => {
            if *pointer(doc, path)? == value()? {
                Ok(())
            } else {
                Err("the value differs from the expected one.".to_owned())
            }
        }
        "" => Err("the operation has no \"op\".".to_owned()),
        other => Err(format!(
            "unknown op \"{other}\" (expected add, remove, replace, move, copy or test)."
        )),
    }
}

fn tokens(path: &str) -> Result<Vec<String>, String> {
    if path.is_empty() {
        return Ok(Vec::new());
    }
    let Some(rest) = path.strip_prefix('/') else {
        return Err(format!(
            "\"{path}\" is not a JSON Pointer (it must start with '/')."
        ));
    };
    Ok(rest
        .split('/')
        .map(|t| t.replace("~1", "/").replace("~0", "~"))
        .collect())
}

fn pointer<'a>(doc: &'a Value, path: &str) -> Result<&'a Value, String> {
    let mut at = doc;
    for t in tokens(path)? {
        at = match at {
            Value::Object(m) => m.get(&t),
            Value::Array(a) => t.parse::<usize>().ok().and_then(|i| a.get(i)),
            _ => None,
        }
        .ok_or_else(|| format!("nothing at \"{path}\"."))?;
    }
    Ok(at)
}

fn pointer_mut<'a>(doc: &'a mut Value, path: &str) -> Result<&'a mut Value, String> {
    let mut at = doc;
    for t in tokens(path)? {
        at = match at {
            Value::Object(m) => m.get_mut(&t),
            Value::Array(a) => t.parse::<usize>().ok().and_then(|i| a.get_mut(i)),
            _ => None,
        }
        .ok_or_else(|| format!("nothing at \"{path}\"."))?;
    }
    Ok(at)
}

fn split_parent(path: &str) -> Result<(String, String), String> {
    let mut t = tokens(path)?;
    let last = t
        .pop()
        .ok_or_else(|| "the whole document cannot be the target here.".to_owned())?;
    let parent = t
        .iter()
        .map(|s| format!("/{}", s.replace('~', "~0").replace('/', "~1")))
        .collect();
    Ok((parent, last))
}

fn add(doc: &mut Value, path: &str, value: Value) -> Result<(), String> {
    if path.is_empty() {
        *doc = value;
        return Ok(());
    }
    let (parent, last) = split_parent(path)?;
    match pointer_mut(doc, &parent)? {
        Value::Object(m) => {
            m.insert(last, value);
            Ok(())
        }
        Value::Array(a) if last == "-" => {
            a.push(value);
            Ok(())
        }
        Value::Array(a) => match last.parse::<usize>() {
            Ok(i) if i <= a.len() => {
                a.insert(i, value);
                Ok(())
            }
            _ => Err(format!("\"{last}\" is not an index of the array.")),
        },
        _ => Err(format!(
            "the parent of \"{path}\" is not an object or array."
        )),
    }
}

fn remove(doc: &mut Value, path: &str) -> Result<Value, String> {
    let (parent, last) = split_parent(path)?;
    match pointer_mut(doc, &parent)? {
        Value::Object(m) => m
            .shift_remove(&last)
            .ok_or_else(|| format!("nothing at \"{path}\".")),
        Value::Array(a) => match last.parse::<usize>() {
            Ok(i) if i < a.len() => Ok(a.remove(i)),
            _ => Err(format!("nothing at \"{path}\".")),
        },
        _ => Err(format!("nothing at \"{path}\".")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn applies_the_rfc_operations() {
        let mut doc = json!({"servers": [{"url": "http://old"}], "paths": {"/a~b": {}, "/x/y": 1}});
        apply(
            &mut doc,
            &json!([
                {"op": "replace", "path": "/servers/0/url", "value": "http://new"},
                {"op": "add", "path": "/servers/-", "value": {"url": "http://two"}},
                {"op": "test", "path": "/paths/~1x~1y", "value": 1},
                {"op": "move", "from": "/paths/~1a~0b", "path": "/paths/~1c"},
                {"op": "copy", "from": "/servers/1", "path": "/servers/0"},
                {"op": "remove", "path": "/paths/~1x~1y"}
            ]),
        )
        .unwrap();
        assert_eq!(
            doc,
            json!({
                "servers": [{"url": "http://two"}, {"url": "http://new"}, {"url": "http://two"}],
                "paths": {"/c": {}}
            })
        );
    }

    #[test]
    fn a_failing_operation_names_its_index() {
        let mut doc = json!({"a": 1});
        let err = apply(
            &mut doc,
            &json!([{"op": "test", "path": "/a", "value": 1}, {"op": "remove", "path": "/b"}]),
        )
        .unwrap_err();
        match err {
            OpenApiError::Override {
                operation_index,
                operation,
                path,
                message,
            } => {
                assert_eq!(
                    (operation_index, operation.as_str(), path.as_str()),
                    (1, "remove", "/b")
                );
                assert!(message.contains("nothing at"), "{message}");
            }
            other => panic!("{other:?}"),
        }
        assert!(apply(&mut doc, &json!({"op": "add"})).is_err());
        assert!(apply(&mut doc, &json!([{"op": "frobnicate", "path": "/a"}])).is_err());
    }
}
