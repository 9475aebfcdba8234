//! Nesting across the grammar → `prepare`: each input byte picks a construct that opens a level
//! (a block, a statement body, a function, a class, an object, a type, a template…) and the
//! next how often it repeats, so a short input describes code nested tens of thousands of
//! levels deep in any mix of shapes. Issue #39: 48,000 nested blocks made one 3.1 GB
//! allocation; libFuzzer's RSS limit fails any shape whose memory grows past linear again.
#![no_main]

/// `(open, close)` of each way the grammar nests; the innermost level holds `1`.
const SHAPES: &[(&str, &str)] = &[
    ("{", "}"),
    ("if (1) ", ""),
    ("if (1) {", "} else {}"),
    ("while (0) ", ""),
    ("for (;;) ", ""),
    ("do ", " while (0)"),
    ("try {", "} catch {}"),
    ("switch (1) { case 1: ", "}"),
    ("l: ", ""),
    ("function f() {", "}"),
    ("async function* g() {", "}"),
    ("() => ", ""),
    ("async () => { await ", "}"),
    ("class A { m() {", "} }"),
    ("(class { static x = ", " })"),
    ("({ a: ", " })"),
    ("({ get a() { return ", " } })"),
    ("[", "]"),
    ("(", ")"),
    ("f(", ")"),
    ("new F(", ")"),
    ("`${", "}`"),
    ("!", ""),
    ("-", ""),
    ("typeof ", ""),
    ("await ", ""),
    ("1 ? 1 : ", ""),
    ("a = ", ""),
    ("a.b[", "]"),
    ("a?.(", ")"),
    ("x as ", ""),
    ("<T>", ""),
    ("(x: Array<", ">) => "),
    ("(x: { a: ", " }) => "),
    ("(x: (1 | ", ")) => "),
    ("namespace N {", "}"),
    ("enum E { A = ", " }"),
    ("<a>", "</a>"),
];

const CAP: usize = 256 * 1024;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let mut opens = String::new();
    let mut closes = Vec::new();
    for pair in data.chunks(2) {
        let (open, close) = SHAPES[pair[0] as usize % SHAPES.len()];
        let repeat = 1 + pair.get(1).copied().unwrap_or(0) as usize * 64;
        for _ in 0..repeat {
            if opens.len() + open.len() + closes.len() * 4 + close.len() > CAP - 8 {
                break;
            }
            opens.push_str(open);
            closes.push(close);
        }
    }
    let mut code = opens;
    code.push('1');
    for close in closes.iter().rev() {
        code.push_str(close);
    }
    if code.len() <= CAP {
        let _ = executor_sandbox::prepare(&code);
    }
});
