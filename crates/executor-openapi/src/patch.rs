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
        apply_one(doc, op, name).map_err(|m| fail(index, name, path, &m))?;
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

fn apply_one(doc: &mut Value, op: &Value, name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("the operation has no \"op\".".to_owned());
    }
    let op: json_patch::PatchOperation = serde_json::from_value(op.clone()).map_err(|e| {
        if ["add", "remove", "replace", "move", "copy", "test"].contains(&name) {
            format!("the operation is malformed: {e}.")
        } else {
            format!("unknown op \"{name}\" (expected add, remove, replace, move, copy or test).")
        }
    })?;
    // One operation at a time, so a failure names its own index.
    json_patch::patch(doc, std::slice::from_ref(&op)).map_err(|e| match e.kind {
        json_patch::PatchErrorKind::TestFailed => {
            "the value differs from the expected one.".to_owned()
        }
        json_patch::PatchErrorKind::InvalidPointer => format!("nothing at \"{}\".", e.path),
        json_patch::PatchErrorKind::CannotMoveInsideItself => {
            "a value cannot be moved into itself.".to_owned()
        }
        other => other.to_string(),
    })
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
