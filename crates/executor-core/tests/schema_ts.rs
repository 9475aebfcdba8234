//! Snapshot tests of the JSON Schema → TypeScript rendering behind `tools.describe.tool`.
//! Refresh snapshots with `UPDATE_EXPECT=1 cargo test -p executor-core --test schema_ts`.

use std::collections::BTreeMap;

use executor_core::schema_ts::{ToolTypes, render_tool_types, schema_to_ts};
use expect_test::{expect, expect_file};
use serde_json::{Map, Value, json};

const BUILTINS: [&str; 3] = ["ToolError", "ToolHttpMeta", "ToolFile"];

fn defs(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => panic!("definitions must be an object"),
    }
}

fn stripe_defs() -> Map<String, Value> {
    let text = include_str!("fixtures/schema_ts/stripe_defs.json");
    defs(serde_json::from_str(text).expect("fixture parses"))
}

/// Input, output and every non-built-in definition as one text.
fn dump(t: &ToolTypes) -> String {
    let mut out = String::new();
    out.push_str("// input\n");
    out.push_str(t.input.as_deref().unwrap_or("(none)"));
    out.push_str("\n\n// output\n");
    out.push_str(&t.output);
    out.push('\n');
    for (name, text) in &t.definitions {
        if BUILTINS.contains(&name.as_str()) {
            continue;
        }
        out.push_str(&format!("\n// {name}\n{text}\n"));
    }
    out
}

/// One schema through `schema_to_ts`, with the definitions it produced.
fn ts(schema: Value, shared: Value) -> String {
    let shared = defs(shared);
    let mut out_defs = BTreeMap::new();
    let mut text = schema_to_ts(&schema, &shared, &mut out_defs);
    for (name, def) in &out_defs {
        text.push_str(&format!("\n\n// {name}\n{def}"));
    }
    text
}

#[test]
fn no_schemas_still_declare_builtins() {
    let t = render_tool_types(None, None, &Map::new());
    assert_eq!(t.input, None);
    let mut all = t.output.clone();
    for (name, text) in &t.definitions {
        all.push_str(&format!("\n\n// {name}\n{text}"));
    }
    expect![[r#"
        { ok: true; data: unknown; http?: ToolHttpMeta } | { ok: false; error: ToolError }

        // ToolError
        interface ToolError {
          code: string;
          message: string;
          status?: number;
          details?: unknown;
          retryable?: boolean;
        }

        // ToolFile
        interface ToolFile {
          _tag: "ToolFile";
          name?: string;
          mimeType: string;
          encoding: "base64";
          data: string;
          byteLength: number;
        }

        // ToolHttpMeta
        interface ToolHttpMeta {
          status: number;
          headers: Record<string, string>;
        }"#]]
    .assert_eq(&all);
}

#[test]
fn stripe_payment_intent_create() {
    let input = json!({
        "type": "object",
        "additionalProperties": false,
        "properties": {
            "amount": {"type": "integer", "description": "Amount intended to be collected, in the smallest currency unit."},
            "currency": {"type": "string", "format": "currency"},
            "customer": {"type": "string", "maxLength": 5000, "description": "ID of the Customer this PaymentIntent belongs to."},
            "capture_method": {"type": "string", "enum": ["automatic", "automatic_async", "manual"]},
            "metadata": {"anyOf": [{"$ref": "#/$defs/metadata"}, {"type": "string", "enum": [""]}]},
            "shipping": {"$ref": "#/components/schemas/shipping"},
            "Idempotency-Key": {"type": "string", "description": "Header parameter."}
        },
        "required": ["amount", "currency"]
    });
    let output = json!({"$ref": "#/components/schemas/payment_intent"});
    let t = render_tool_types(Some(&input), Some(&output), &stripe_defs());
    expect_file!["fixtures/schema_ts/stripe_payment_intent_create.ts.txt"].assert_eq(&dump(&t));
}

#[test]
fn stripe_every_definition() {
    // Every definition of the fixture reachable at once: each rendered exactly once.
    let shared = stripe_defs();
    let any_of: Vec<Value> = shared
        .keys()
        .map(|k| json!({"$ref": format!("#/$defs/{k}")}))
        .collect();
    let t = render_tool_types(None, Some(&json!({"anyOf": any_of})), &shared);
    assert_eq!(t.definitions.len(), shared.len() + BUILTINS.len());
    expect_file!["fixtures/schema_ts/stripe_all.ts.txt"].assert_eq(&dump(&t));
}

#[test]
fn github_style_names() {
    let shared = json!({
        "simple-user": {
            "title": "Simple User",
            "type": "object",
            "properties": {"login": {"type": "string"}, "id": {"type": "integer", "format": "int64"}},
            "required": ["login", "id"]
        },
        "nullable-simple-user": {
            "anyOf": [{"$ref": "#/components/schemas/simple-user"}, {"type": "null"}]
        },
        "repo-owner": {"type": "string"},
        "repo_owner": {"type": "integer"},
        "2fa": {"type": "boolean"},
        "ToolError": {"type": "object", "properties": {"upstream": {"type": "string"}}},
        "Record": {"type": "string"}
    });
    let input = json!({
        "type": "object",
        "properties": {
            "owner": {"$ref": "#/$defs/repo-owner"},
            "owner_id": {"$ref": "#/$defs/repo_owner"},
            "two_factor": {"$ref": "#/definitions/2fa"},
            "assignee": {"$ref": "#/components/schemas/nullable-simple-user"},
            "err": {"$ref": "#/$defs/ToolError"},
            "rec": {"$ref": "#/$defs/Record"}
        },
        "required": ["owner"]
    });
    let t = render_tool_types(Some(&input), None, &defs(shared));
    expect![[r#"
        // input
        {
          owner: RepoOwner;
          owner_id?: RepoOwner2;
          two_factor?: _2fa;
          assignee?: NullableSimpleUser;
          err?: ToolError2;
          rec?: Record2;
        }

        // output
        { ok: true; data: unknown; http?: ToolHttpMeta } | { ok: false; error: ToolError }

        // NullableSimpleUser
        type NullableSimpleUser = SimpleUser | null;

        // Record2
        type Record2 = string;

        // RepoOwner
        type RepoOwner = string;

        // RepoOwner2
        type RepoOwner2 = number;

        // SimpleUser
        interface SimpleUser {
          login: string;
          /** @format int64 */
          id: number;
        }

        // ToolError2
        interface ToolError2 {
          upstream?: string;
        }

        // _2fa
        type _2fa = boolean;
    "#]]
    .assert_eq(&dump(&t));
}

#[test]
fn recursive_types_terminate() {
    let shared = json!({
        "Node": {
            "type": "object",
            "description": "A tree node.",
            "properties": {
                "value": {"type": "string"},
                "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}},
                "parent": {"anyOf": [{"$ref": "#/$defs/Node"}, {"type": "null"}]}
            },
            "required": ["value", "children"]
        },
        "A": {"type": "object", "properties": {"b": {"$ref": "#/$defs/B"}}},
        "B": {"type": "object", "properties": {"a": {"$ref": "#/$defs/A"}, "self": {"$ref": "#/$defs/B"}}},
        "Json": {
            "type": ["string", "number", "boolean", "null", "array", "object"],
            "items": {"$ref": "#/$defs/Json"},
            "additionalProperties": {"$ref": "#/$defs/Json"}
        }
    });
    let input = json!({
        "type": "object",
        "properties": {
            "tree": {"$ref": "#/$defs/Node"},
            "a": {"$ref": "#/$defs/A"},
            "json": {"$ref": "#/$defs/Json"}
        }
    });
    let output = json!({"type": "array", "items": {"$ref": "#/$defs/B"}});
    let t = render_tool_types(Some(&input), Some(&output), &defs(shared));
    expect![[r#"
        // input
        {
          tree?: Node;
          a?: A;
          json?: Json;
        }

        // output
        { ok: true; data: B[]; http?: ToolHttpMeta } | { ok: false; error: ToolError }

        // A
        interface A {
          b?: B;
        }

        // B
        interface B {
          a?: A;
          self?: B;
        }

        // Json
        type Json = string | number | boolean | null | Json[] | Record<string, Json>;

        // Node
        /** A tree node. */
        interface Node {
          value: string;
          children: Node[];
          parent?: Node | null;
        }
    "#]]
    .assert_eq(&dump(&t));
}

#[test]
fn root_self_reference() {
    let schema = json!({
        "title": "comment",
        "type": "object",
        "properties": {"text": {"type": "string"}, "replies": {"type": "array", "items": {"$ref": "#"}}},
        "required": ["text"]
    });
    expect![[r#"
        {
          text: string;
          replies?: Comment[];
        }

        // Comment
        interface Comment {
          text: string;
          replies?: Comment[];
        }"#]]
    .assert_eq(&ts(schema, json!({})));
}

#[test]
fn unions_consts_and_parentheses() {
    let schema = json!({
        "type": "object",
        "properties": {
            "id": {"oneOf": [{"type": "string"}, {"type": "integer"}]},
            "ids": {"type": "array", "items": {"anyOf": [{"type": "string"}, {"type": "number"}]}},
            "kind": {"const": "user"},
            "version": {"const": 2},
            "flag": {"const": true},
            "mode": {"enum": ["a", "b", 1, null, false, "a"]},
            "weird": {"enum": [{"x": 1}, [1, "two"]]},
            "none": {"enum": []},
            "shape": {
                "oneOf": [
                    {"type": "object", "properties": {"kind": {"const": "circle"}, "radius": {"type": "number"}}, "required": ["kind", "radius"]},
                    {"type": "object", "properties": {"kind": {"const": "square"}, "side": {"type": "number"}}, "required": ["kind", "side"]}
                ]
            },
            "grid": {"type": "array", "items": {"type": "array", "items": {"type": ["integer", "null"]}}},
            "either": {
                "type": "object",
                "properties": {"common": {"type": "string"}},
                "oneOf": [{"required": ["a"]}, {"required": ["b"]}]
            },
            "mixed": {
                "type": "object",
                "properties": {"kind": {"type": "string"}},
                "required": ["kind"],
                "anyOf": [
                    {"properties": {"a": {"type": "string"}}},
                    {"properties": {"b": {"type": "number"}}}
                ]
            },
            "merged": {
                "allOf": [
                    {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]},
                    {"type": "object", "properties": {"b": {"type": "number"}}},
                    {"required": ["b"]}
                ]
            },
            "extended": {
                "allOf": [{"$ref": "#/$defs/Base"}, {"type": "object", "properties": {"extra": {"type": "boolean"}}}]
            },
            "arr_of_intersections": {
                "type": "array",
                "items": {"allOf": [{"$ref": "#/$defs/Base"}, {"$ref": "#/$defs/Other"}]}
            },
            "intersect_union": {
                "allOf": [{"$ref": "#/$defs/Base"}, {"anyOf": [{"$ref": "#/$defs/Other"}, {"type": "null"}]}]
            },
            "single_all_of": {"allOf": [{"$ref": "#/$defs/Base"}], "description": "Wrapped ref."},
            "not": {"not": {"type": "string"}},
            "anything": {},
            "nothing": false,
            "yes": true
        }
    });
    let shared = json!({
        "Base": {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]},
        "Other": {"type": "object", "properties": {"name": {"type": "string"}}}
    });
    expect![[r#"
        {
          id?: string | number;
          ids?: (string | number)[];
          kind?: "user";
          version?: 2;
          flag?: true;
          mode?: "a" | "b" | 1 | null | false;
          weird?: {"x":1} | [1,"two"];
          none?: never;
          shape?: {
            kind: "circle";
            radius: number;
          } | {
            kind: "square";
            side: number;
          };
          grid?: (number | null)[][];
          either?: {
            common?: string;
          };
          mixed?: {
            kind: string;
          } & ({
            a?: string;
          } | {
            b?: number;
          });
          merged?: {
            a: string;
            b: number;
          };
          extended?: Base & {
            extra?: boolean;
          };
          arr_of_intersections?: (Base & Other)[];
          intersect_union?: Base & (Other | null);
          /** Wrapped ref. */
          single_all_of?: Base;
          not?: unknown;
          anything?: unknown;
          nothing?: never;
          yes?: unknown;
        }

        // Base
        interface Base {
          id: string;
        }

        // Other
        interface Other {
          name?: string;
        }"#]]
    .assert_eq(&ts(schema, shared));
}

#[test]
fn jsdoc_formats_and_annotations() {
    let schema = json!({
        "type": "object",
        "properties": {
            "created_at": {"type": "string", "format": "date-time", "description": "When it was created."},
            "homepage": {"type": "string", "format": "uri"},
            "email": {"type": "string", "format": "email", "title": "Email address"},
            "big": {"type": "integer", "format": "int64", "default": 0, "minimum": 0},
            "old": {"type": "boolean", "deprecated": true},
            "tags": {"type": "array", "items": {"type": "string"}, "default": ["a", "b"], "examples": [["x"]]},
            "sample": {"type": "string", "example": "hello"},
            "note": {
                "type": "string",
                "description": "First line.\n\nSecond paragraph with a */ comment terminator\n  and an indented line.   "
            },
            "blank": {"type": "string", "description": "   "},
            "per_page": {"type": "integer", "description": "Max items", "default": 30, "maximum": 100}
        },
        "required": ["created_at"]
    });
    expect![[r#"
        {
          /**
           * When it was created.
           * @format date-time
           */
          created_at: string;
          /** @format uri */
          homepage?: string;
          /**
           * Email address
           * @format email
           */
          email?: string;
          /**
           * @format int64
           * @default 0
           */
          big?: number;
          /** @deprecated */
          old?: boolean;
          /**
           * @default ["a","b"]
           * @example ["x"]
           */
          tags?: string[];
          /** @example "hello" */
          sample?: string;
          /**
           * First line.
           *
           * Second paragraph with a *\/ comment terminator
           *   and an indented line.
           */
          note?: string;
          blank?: string;
          /**
           * Max items
           * @default 30
           */
          per_page?: number;
        }"#]]
    .assert_eq(&ts(schema, json!({})));
}

#[test]
fn additional_properties_variants() {
    let schema = json!({
        "type": "object",
        "properties": {
            "open_absent": {"type": "object"},
            "open_true": {"type": "object", "additionalProperties": true},
            "closed_empty": {"type": "object", "additionalProperties": false},
            "string_map": {"type": "object", "additionalProperties": {"type": "string"}},
            "nested_map": {"type": "object", "additionalProperties": {"type": "object", "properties": {"n": {"type": "integer"}}}},
            "props_and_true": {"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": true},
            "props_and_false": {"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": false},
            "props_and_schema": {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "boolean"}}, "required": ["a"], "additionalProperties": {"type": "number"}},
            "props_and_object_schema": {"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": {"type": "object", "properties": {"x": {"type": "string"}}}},
            "patterns": {"type": "object", "patternProperties": {"^x-": {"type": "string"}, "^n-": {"type": "number"}}},
            "patterns_closed": {"type": "object", "properties": {"id": {"type": "string"}}, "patternProperties": {"^x-": {"type": "string"}}, "additionalProperties": false},
            "unevaluated": {"type": "object", "properties": {"a": {"type": "string"}}, "unevaluatedProperties": false},
            "implicit_object": {"properties": {"a": {"type": "string"}}}
        }
    });
    expect![[r#"
        {
          open_absent?: Record<string, unknown>;
          open_true?: Record<string, unknown>;
          closed_empty?: {};
          string_map?: Record<string, string>;
          nested_map?: {
            [key: string]: {
              n?: number;
            };
          };
          props_and_true?: {
            a?: string;
            [key: string]: unknown;
          };
          props_and_false?: {
            a?: string;
          };
          props_and_schema?: {
            a: string;
            b?: boolean;
            [key: string]: number | string | boolean;
          };
          props_and_object_schema?: {
            a?: string;
            [key: string]: unknown;
          };
          patterns?: Record<string, string | number>;
          patterns_closed?: {
            id?: string;
            [key: string]: string;
          };
          unevaluated?: {
            a?: string;
          };
          implicit_object?: {
            a?: string;
          };
        }"#]]
    .assert_eq(&ts(schema, json!({})));
}

#[test]
fn quoted_property_names() {
    let schema = json!({
        "type": "object",
        "properties": {
            "x-api-key": {"type": "string", "description": "API key header."},
            "Content-Type": {"type": "string"},
            "2fa": {"type": "boolean"},
            "with space": {"type": "string"},
            "quote\"d": {"type": "string"},
            "$valid_id": {"type": "string"},
            "_private": {"type": "string"},
            "": {"type": "string"},
            "ünïcode": {"type": "string"},
            "default": {"type": "string"}
        },
        "required": ["x-api-key"]
    });
    expect![[r#"
        {
          /** API key header. */
          "x-api-key": string;
          "Content-Type"?: string;
          "2fa"?: boolean;
          "with space"?: string;
          "quote\"d"?: string;
          $valid_id?: string;
          _private?: string;
          ""?: string;
          "ünïcode"?: string;
          default?: string;
        }"#]]
    .assert_eq(&ts(schema, json!({})));
}

#[test]
fn nullable_and_type_arrays() {
    let schema = json!({
        "type": "object",
        "properties": {
            "a": {"type": "string", "nullable": true},
            "b": {"type": ["string", "null"]},
            "c": {"type": ["string", "null"], "nullable": true},
            "d": {"type": ["integer", "number"]},
            "e": {"type": ["object", "null"], "properties": {"x": {"type": "string"}}},
            "f": {"type": "string", "enum": ["x", "y"], "nullable": true},
            "g": {"$ref": "#/components/schemas/Pet", "nullable": true},
            "h": {"type": "array", "items": {"type": "string"}, "nullable": true},
            "i": {"type": "array", "items": {"type": "string", "nullable": true}},
            "j": {"type": "string", "x-nullable": true},
            "k": {"type": ["array", "string"], "items": {"type": "integer"}},
            "l": {"type": []},
            "m": {"type": "null"}
        }
    });
    let shared = json!({"Pet": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}});
    expect![[r#"
        {
          a?: string | null;
          b?: string | null;
          c?: string | null;
          d?: number;
          e?: {
            x?: string;
          } | null;
          f?: "x" | "y" | null;
          g?: Pet | null;
          h?: string[] | null;
          i?: (string | null)[];
          j?: string | null;
          k?: number[] | string;
          l?: unknown;
          m?: null;
        }

        // Pet
        interface Pet {
          name: string;
        }"#]]
    .assert_eq(&ts(schema, shared));
}

#[test]
fn tuples_and_arrays() {
    let schema = json!({
        "type": "object",
        "properties": {
            "point": {"type": "array", "prefixItems": [{"type": "number"}, {"type": "number"}]},
            "point_open": {"type": "array", "prefixItems": [{"type": "number"}], "items": {"type": "string"}},
            "point_closed": {"type": "array", "prefixItems": [{"type": "number"}], "items": false},
            "draft7": {"type": "array", "items": [{"type": "string"}, {"type": "boolean"}]},
            "draft7_rest": {"type": "array", "items": [{"type": "string"}], "additionalItems": {"type": "integer"}},
            "optional_tail": {"type": "array", "prefixItems": [{"type": "string"}, {"type": ["number", "null"]}], "minItems": 1},
            "no_items": {"type": "array"},
            "any_items": {"type": "array", "items": true},
            "empty": {"type": "array", "items": false},
            "objects": {"type": "array", "items": {"type": "object", "properties": {"a": {"type": "string"}}}},
            "inferred": {"items": {"type": "string"}}
        }
    });
    expect![[r#"
        {
          point?: [number, number];
          point_open?: [number, ...string[]];
          point_closed?: [number];
          draft7?: [string, boolean];
          draft7_rest?: [string, ...number[]];
          optional_tail?: [string, (number | null)?];
          no_items?: unknown[];
          any_items?: unknown[];
          empty?: [];
          objects?: {
            a?: string;
          }[];
          inferred?: string[];
        }"#]]
    .assert_eq(&ts(schema, json!({})));
}

#[test]
fn unresolved_refs() {
    let schema = json!({
        "type": "object",
        "properties": {
            "missing": {"$ref": "#/$defs/Missing"},
            "remote": {"$ref": "https://example.com/schema.json#/definitions/X"},
            "evil": {"$ref": "#/$defs/a*/b"},
            "pointer": {"$ref": "#/properties/missing_too"},
            "not_a_string": {"$ref": 42}
        }
    });
    expect![[r#"
        {
          missing?: unknown /* unresolved $ref: #/$defs/Missing */;
          remote?: unknown /* unresolved $ref: https://example.com/schema.json#/definitions/X */;
          evil?: unknown /* unresolved $ref: #/$defs/a*\/b */;
          pointer?: unknown /* unresolved $ref: #/properties/missing_too */;
          not_a_string?: unknown;
        }"#]]
    .assert_eq(&ts(schema, json!({})));
}

#[test]
fn json_pointer_refs() {
    let schema = json!({
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "The name."},
            "alias": {"$ref": "#/properties/name"},
            "city": {"$ref": "#/$defs/Address/properties/city"},
            "slashed": {"$ref": "#/$defs/a~1b"},
            "spaced": {"$ref": "#/$defs/with%20space"}
        }
    });
    let shared = json!({
        "Address": {"type": "object", "properties": {"city": {"type": "string", "enum": ["Paris", "Oslo"]}}},
        "a/b": {"type": "integer"},
        "with space": {"type": "boolean"}
    });
    expect![[r#"
        {
          /** The name. */
          name?: string;
          alias?: string;
          city?: "Paris" | "Oslo";
          slashed?: AB;
          spaced?: WithSpace;
        }

        // AB
        type AB = number;

        // WithSpace
        type WithSpace = boolean;"#]]
    .assert_eq(&ts(schema, shared));
}

#[test]
fn local_definitions() {
    // draft-07 `definitions` / 2020-12 `$defs` inside the tool schemas themselves. A local def
    // equal to the shared one of the same name is the shared one; a different one gets a fresh
    // name; the same local def in input and output is declared once (`#/definitions/X` also
    // finds a local `$defs/X` and vice versa).
    let shared = json!({
        "Tag": {"type": "string", "enum": ["a", "b"]},
        "Item": {"type": "object", "properties": {"id": {"type": "integer"}}}
    });
    let input = json!({
        "type": "object",
        "definitions": {
            "Tag": {"type": "string", "enum": ["a", "b"]},
            "Item": {"type": "object", "properties": {"id": {"type": "string"}}},
            "Page": {"type": "object", "properties": {"cursor": {"type": "string"}, "next": {"$ref": "#/definitions/Page"}}}
        },
        "properties": {
            "tag": {"$ref": "#/definitions/Tag"},
            "item": {"$ref": "#/definitions/Item"},
            "page": {"$ref": "#/$defs/Page"}
        }
    });
    let output = json!({
        "type": "object",
        "$defs": {
            "Page": {"type": "object", "properties": {"cursor": {"type": "string"}, "next": {"$ref": "#/definitions/Page"}}},
            "Item": {"type": "object", "properties": {"id": {"type": "integer"}}}
        },
        "properties": {
            "page": {"$ref": "#/$defs/Page"},
            "item": {"$ref": "#/$defs/Item"}
        }
    });
    let t = render_tool_types(Some(&input), Some(&output), &defs(shared));
    expect![[r#"
        // input
        {
          tag?: Tag;
          item?: Item2;
          page?: Page;
        }

        // output
        {
          ok: true;
          data: {
            page?: Page;
            item?: Item;
          };
          http?: ToolHttpMeta;
        } | { ok: false; error: ToolError }

        // Item
        interface Item {
          id?: number;
        }

        // Item2
        interface Item2 {
          id?: string;
        }

        // Page
        interface Page {
          cursor?: string;
          next?: Page;
        }

        // Tag
        type Tag = "a" | "b";
    "#]]
    .assert_eq(&dump(&t));
}

#[test]
fn graphql_style_input() {
    let shared = json!({
        "Role": {"type": "string", "enum": ["ADMIN", "MEMBER", "GUEST"], "description": "A user's role."},
        "CreateUserInput": {
            "type": "object",
            "properties": {
                "name": {"type": "string"},
                "role": {"$ref": "#/$defs/Role"},
                "manager": {"$ref": "#/$defs/CreateUserInput"},
                "birthday": {"type": "string", "description": "Custom scalar: Date"}
            },
            "required": ["name"]
        }
    });
    let input = json!({
        "type": "object",
        "properties": {
            "input": {"$ref": "#/$defs/CreateUserInput"},
            "select": {"type": "string", "description": "GraphQL selection set override."}
        },
        "required": ["input"]
    });
    let t = render_tool_types(Some(&input), None, &defs(shared));
    expect![[r#"
        // input
        {
          input: CreateUserInput;
          /** GraphQL selection set override. */
          select?: string;
        }

        // output
        { ok: true; data: unknown; http?: ToolHttpMeta } | { ok: false; error: ToolError }

        // CreateUserInput
        interface CreateUserInput {
          name: string;
          role?: Role;
          manager?: CreateUserInput;
          /** Custom scalar: Date */
          birthday?: string;
        }

        // Role
        /** A user's role. */
        type Role = "ADMIN" | "MEMBER" | "GUEST";
    "#]]
    .assert_eq(&dump(&t));
}

#[test]
fn mcp_output_schema() {
    let output = json!({
        "type": "object",
        "properties": {
            "content": {
                "type": "array",
                "items": {
                    "oneOf": [
                        {"type": "object", "properties": {"type": {"const": "text"}, "text": {"type": "string"}}, "required": ["type", "text"]},
                        {"type": "object", "properties": {"type": {"const": "image"}, "data": {"type": "string", "contentEncoding": "base64"}, "mimeType": {"type": "string"}}, "required": ["type", "data", "mimeType"]}
                    ]
                }
            },
            "structuredContent": {
                "type": "object",
                "properties": {
                    "temperature": {"type": "number", "description": "Temperature in celsius"},
                    "conditions": {"type": "string"}
                },
                "required": ["temperature", "conditions"]
            },
            "isError": {"const": false}
        },
        "required": ["content"]
    });
    let input = json!({
        "type": "object",
        "properties": {"location": {"type": "string", "description": "City name or zip code"}},
        "required": ["location"],
        "$schema": "https://json-schema.org/draft/2020-12/schema"
    });
    let t = render_tool_types(Some(&input), Some(&output), &Map::new());
    expect![[r#"
        // input
        {
          /** City name or zip code */
          location: string;
        }

        // output
        {
          ok: true;
          data: {
            content: ({
              type: "text";
              text: string;
            } | {
              type: "image";
              data: string;
              mimeType: string;
            })[];
            structuredContent?: {
              /** Temperature in celsius */
              temperature: number;
              conditions: string;
            };
            isError?: false;
          };
          http?: ToolHttpMeta;
        } | { ok: false; error: ToolError }
    "#]]
    .assert_eq(&dump(&t));
}

#[test]
fn repeated_schema_to_ts_calls_share_definitions() {
    let shared = defs(json!({
        "User": {"type": "object", "properties": {"id": {"type": "string"}, "friend": {"$ref": "#/$defs/User"}}}
    }));
    let mut out_defs = BTreeMap::new();
    let a = schema_to_ts(&json!({"$ref": "#/$defs/User"}), &shared, &mut out_defs);
    let b = schema_to_ts(
        &json!({"type": "array", "items": {"$ref": "#/$defs/User"}}),
        &shared,
        &mut out_defs,
    );
    assert_eq!(a, "User");
    assert_eq!(b, "User[]");
    assert_eq!(out_defs.keys().collect::<Vec<_>>(), ["User"]);
}

#[test]
fn output_is_deterministic() {
    let shared = stripe_defs();
    let output = json!({"$ref": "#/$defs/charge"});
    let first = render_tool_types(None, Some(&output), &shared);
    for _ in 0..3 {
        assert_eq!(render_tool_types(None, Some(&output), &shared), first);
    }
}

#[test]
fn garbage_never_panics() {
    let garbage = [
        json!(null),
        json!(42),
        json!("string"),
        json!([1, 2, 3]),
        json!({"type": 7}),
        json!({"type": ["nope", 3, null]}),
        json!({"properties": "x", "required": "y", "items": 5, "enum": "z", "allOf": {}}),
        json!({"properties": {"a": 1, "b": null, "c": [], "d": "str"}}),
        json!({"anyOf": [], "oneOf": [null], "allOf": [false]}),
        json!({"$ref": ""}),
        json!({"$ref": "#/"}),
        json!({"$ref": "#/$defs/"}),
        json!({"$ref": "#/$defs/%E2%28%A1"}),
        json!({"$ref": "#/$defs/x/items/99999999999999999999"}),
        json!({"type": "array", "items": [1, "a"], "minItems": -1, "additionalItems": 3}),
        json!({"prefixItems": "x", "minItems": 1e300}),
        json!({"additionalProperties": {"$ref": "#"}, "patternProperties": {"x": null}}),
        json!({"description": 5, "title": ["t"], "format": {}, "deprecated": "yes"}),
        json!({"nullable": "true", "x-nullable": 1, "const": {"a": [1, {"b": null}]}}),
        json!({"$defs": "not a map", "definitions": [1], "$ref": "#/$defs/a"}),
    ];
    let shared = defs(json!({
        "a": {"$ref": "#/$defs/a"},
        "b": 5,
        "c": {"allOf": [{"$ref": "#/$defs/c"}, {"$ref": "#/$defs/b"}]},
        "": {"type": "string"}
    }));
    for g in &garbage {
        let t = render_tool_types(Some(g), Some(g), &shared);
        assert!(
            t.output.starts_with("{ ok: true; data: ") || t.output.starts_with("{\n  ok: true;")
        );
        for name in BUILTINS {
            assert!(t.definitions.contains_key(name));
        }
        let all_refs = json!({"anyOf": [{"$ref": "#/$defs/a"}, {"$ref": "#/$defs/b"}, {"$ref": "#/$defs/c"}, {"$ref": "#/$defs/"}]});
        render_tool_types(Some(&all_refs), Some(g), &shared);
    }
}

#[test]
fn deep_and_huge_schemas_are_bounded() {
    // 200 levels of nesting (built by hand: serde_json's parser would stop at 128).
    let mut deep = json!({"type": "string"});
    for _ in 0..200 {
        deep = json!({"type": "object", "properties": {"x": deep}});
    }
    let text = schema_to_ts(&deep, &Map::new(), &mut BTreeMap::new());
    assert!(text.contains("unknown /* nesting too deep */"));
    assert!(text.len() < 100_000);

    // Exponential fan-out through inline pointers: bounded by the node budget.
    let fan = json!({
        "type": "object",
        "properties": {
            "l": {"$ref": "#"},
            "a": {"type": "array", "items": {"$ref": "#/properties/a"}},
            "b": {"anyOf": [{"$ref": "#/properties/b"}, {"$ref": "#/properties/b"}]},
            "c": {"type": "object", "properties": {"x": {"$ref": "#/properties/c"}, "y": {"$ref": "#/properties/c"}}}
        }
    });
    let t = render_tool_types(Some(&fan), Some(&fan), &Map::new());
    let size: usize = t.input.as_deref().map_or(0, str::len)
        + t.output.len()
        + t.definitions.values().map(String::len).sum::<usize>();
    assert!(size < 8_000_000, "output too large: {size}");

    // A wide shared map: thousands of definitions chained by `$ref` (no stack overflow).
    let mut wide = Map::new();
    for i in 0..5_000 {
        wide.insert(
            format!("def-{i}"),
            json!({"type": "object", "properties": {"next": {"$ref": format!("#/$defs/def-{}", i + 1)}}}),
        );
    }
    let t = render_tool_types(None, Some(&json!({"$ref": "#/$defs/def-0"})), &wide);
    assert!(t.definitions.len() > 1_000);
    assert!(t.definitions.contains_key("Def0"));
}
