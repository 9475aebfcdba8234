#[test]
fn scratch() {
    let n: usize = std::env::var("N").unwrap().parse().unwrap();
    let kind = std::env::var("K").unwrap();
    let code = match kind.as_str() {
        "arr" => format!("return {}1{};", "[".repeat(n), "]".repeat(n)),
        "not" => format!("return {}1;", "!".repeat(n)),
        "neg" => format!("return {}1;", "- ".repeat(n)),
        "tern" => format!("return {}1;", "a?b:".repeat(n)),
        "arrow" => format!("return {}1;", "a=>".repeat(n)),
        "if" => format!("{}return 1;", "if(a)".repeat(n)),
        "assign" => format!("{}1;", "a=".repeat(n)),
        "add" => format!("return 1{};", "+1".repeat(n)),
        _ => unreachable!(),
    };
    let t = std::thread::Builder::new().stack_size(256 << 20).spawn(move || {
        let r = executor_sandbox::prepare(&code).map(|_| ());
        r.map_err(|e| e.chars().take(100).collect::<String>())
    }).unwrap();
    println!("{kind} {n} {:?}", t.join().unwrap());
}
