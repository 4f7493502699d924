//! The crate's modules depend on one another without circles: read from
//! the sources, every `crate::<module>` path of a module (its `use`s, nested
//! groups included, and its inline paths; a submodule counts as its parent,
//! test-only modules aside; a name the crate root re-exports, such as
//! `crate::Error`, counts as the module it comes from) names a module below
//! it. The builder modules reach the engine session through `session`, never
//! through `app`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// src without its comments and the contents of its string literals (a
/// `"http://..."` is not a comment, a `"crate::x"` not a path).
fn strip_comments(src: &str) -> String {
    let mut out = String::with_capacity(src.len());
    let mut chars = src.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '/' if chars.peek() == Some(&'/') => {
                for c in chars.by_ref() {
                    if c == '\n' {
                        out.push('\n');
                        break;
                    }
                }
            }
            '/' if chars.peek() == Some(&'*') => {
                chars.next();
                let mut last = ' ';
                for c in chars.by_ref() {
                    if last == '*' && c == '/' {
                        break;
                    }
                    last = c;
                }
                out.push(' ');
            }
            '"' => {
                out.push('"');
                while let Some(c) = chars.next() {
                    match c {
                        '\\' => {
                            chars.next();
                        }
                        '"' => break,
                        _ => {}
                    }
                }
                out.push('"');
            }
            // A char literal such as '"' or '{' (a lifetime has no closing quote).
            '\'' => {
                out.push('\'');
                let mut ahead = chars.clone();
                let lit = match ahead.next() {
                    Some('\\') => ahead.position(|c| c == '\'').is_some_and(|n| n < 10),
                    Some(_) => ahead.next() == Some('\''),
                    None => false,
                };
                if lit {
                    if chars.next() == Some('\\') {
                        for c in chars.by_ref() {
                            if c == '\'' {
                                break;
                            }
                        }
                    } else {
                        chars.next();
                    }
                    out.push('\'');
                }
            }
            _ => out.push(c),
        }
    }
    out
}

fn ident(s: &str) -> String {
    s.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect()
}

/// The first segments of the use tree at the start of s: `x::...` gives x,
/// `{x::{a, b}, y}` gives x and y.
fn heads(s: &str) -> Vec<String> {
    let Some(group) = s.strip_prefix('{') else {
        return vec![ident(s)];
    };
    let mut out = Vec::new();
    let (mut depth, mut start) = (0usize, 0usize);
    for (i, c) in group.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => {
                out.push(ident(group[start..].trim_start()));
                break;
            }
            '}' => depth -= 1,
            ',' if depth == 0 => {
                out.push(ident(group[start..].trim_start()));
                start = i + 1;
            }
            _ => {}
        }
    }
    out.retain(|n| !n.is_empty() && n != "self");
    out
}

/// The names src reaches through `crate::`: `crate::x` paths and
/// `use crate::{x, y::{z, w}}` groups.
fn deps_of(src: &str) -> BTreeSet<String> {
    let src = strip_comments(src);
    src.match_indices("crate::").flat_map(|(i, _)| heads(&src[i + "crate::".len()..])).collect()
}

/// What the crate root re-exports, by name: `pub use m::{A, B}` gives A and B
/// from m.
fn reexports(lib: &str) -> BTreeMap<String, String> {
    let lib = strip_comments(lib);
    let mut out = BTreeMap::new();
    for (i, _) in lib.match_indices("pub use ") {
        let rest = &lib[i + "pub use ".len()..];
        let item = &rest[..rest.find(';').unwrap_or(rest.len())];
        let module = ident(item);
        if let Some(group) = item.strip_prefix(&format!("{module}::{{")) {
            for name in group.trim_end_matches('}').split(',') {
                let name = name.trim();
                let name = name.rsplit(" as ").next().unwrap_or(name);
                out.insert(ident(name), module.clone());
            }
        } else if let Some(name) = item.rsplit("::").next() {
            out.insert(ident(name.rsplit(" as ").next().unwrap_or(name)), module.clone());
        }
    }
    out
}

/// The submodules a module file declares `#[cfg(test)]`.
fn test_modules(src: &str) -> BTreeSet<String> {
    let lines: Vec<&str> = src.lines().map(str::trim).collect();
    lines
        .windows(2)
        .filter(|w| w[0] == "#[cfg(test)]")
        .filter_map(|w| w[1].strip_prefix("mod ").map(|m| m.trim_end_matches(';').to_owned()))
        .collect()
}

/// Adds to deps the names that the submodules in dir (of the module whose
/// source is parent) reach, down the tree, skipping its `#[cfg(test)]` ones.
fn submodule_deps(dir: &Path, parent: &str, deps: &mut BTreeSet<String>) {
    let skip = test_modules(parent);
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for sub in entries {
        let sub = sub.expect("an entry").path();
        let name = sub.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        if sub.extension().is_some_and(|e| e == "rs") && !skip.contains(&name) {
            let text = std::fs::read_to_string(&sub).expect("readable");
            deps.extend(deps_of(&text));
            submodule_deps(&dir.join(&name), &text, deps);
        }
    }
}

fn graph() -> BTreeMap<String, BTreeSet<String>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for entry in std::fs::read_dir(&src).expect("src") {
        let path = entry.expect("an entry").path();
        let Some(stem) = path.file_stem().map(|s| s.to_string_lossy().into_owned()) else { continue };
        if path.extension().is_none_or(|e| e != "rs") || stem == "lib" {
            continue;
        }
        let text = std::fs::read_to_string(&path).expect("readable");
        let mut deps = deps_of(&text);
        // Its submodules (src/<stem>/**/*.rs) count as the module, test-only ones aside.
        submodule_deps(&src.join(&stem), &text, &mut deps);
        g.insert(stem, deps);
    }
    let via_root = reexports(&std::fs::read_to_string(src.join("lib.rs")).expect("lib.rs"));
    let known: BTreeSet<String> = g.keys().cloned().collect();
    for (m, deps) in g.iter_mut() {
        *deps = deps
            .iter()
            .map(|d| via_root.get(d).cloned().unwrap_or_else(|| d.clone()))
            .filter(|d| known.contains(d) && d != m)
            .collect();
    }
    g
}

/// A cycle of g, as the modules along it.
fn cycle(g: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        m: &str,
        g: &BTreeMap<String, BTreeSet<String>>,
        state: &mut BTreeMap<String, u8>,
        path: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        state.insert(m.to_owned(), 1);
        path.push(m.to_owned());
        for n in g.get(m).into_iter().flatten() {
            match state.get(n) {
                Some(1) => {
                    let at = path.iter().position(|p| p == n).expect("on the path");
                    let mut c = path[at..].to_vec();
                    c.push(n.clone());
                    return Some(c);
                }
                None => {
                    if let Some(c) = visit(n, g, state, path) {
                        return Some(c);
                    }
                }
                _ => {}
            }
        }
        path.pop();
        state.insert(m.to_owned(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for m in g.keys() {
        if !state.contains_key(m) {
            if let Some(c) = visit(m, g, &mut state, &mut Vec::new()) {
                return Some(c);
            }
        }
    }
    None
}

#[test]
fn the_modules_depend_on_one_another_without_circles() {
    let g = graph();
    for m in ["app", "dsl", "fold", "store", "windows", "session", "bundle", "errors"] {
        assert!(g.contains_key(m), "no module {m} in {:?}", g.keys());
    }
    if let Some(c) = cycle(&g) {
        panic!("module circle: {}", c.join(" -> "));
    }
}

#[test]
fn the_builder_reaches_the_session_not_the_app() {
    let g = graph();
    let offenders: Vec<&String> = ["dsl", "fold", "store", "windows", "table", "branch", "join", "session"]
        .iter()
        .filter_map(|m| g.get_key_value(*m))
        .filter(|(_, deps)| deps.contains("app"))
        .map(|(m, _)| m)
        .collect();
    assert!(offenders.is_empty(), "{offenders:?} depend on app");
}

#[test]
fn the_check_sees_a_circle() {
    let g: BTreeMap<String, BTreeSet<String>> = [("a", "b"), ("b", "c"), ("c", "a")]
        .into_iter()
        .map(|(m, d)| (m.to_owned(), BTreeSet::from([d.to_owned()])))
        .collect();
    assert_eq!(cycle(&g), Some(vec!["a".into(), "b".into(), "c".into(), "a".into()]));
    assert_eq!(deps_of("use crate::{dsl::Handle, fold};\nlet x = crate::store::Y; // crate::app"), {
        BTreeSet::from(["dsl".to_owned(), "fold".to_owned(), "store".to_owned()])
    });
    // Nested groups, a URL in a string, a char literal, a block comment.
    let src = "use crate::{a::{B, c::D}, e, self};\nlet u = \"http://x\"; let q = '\"'; let v = crate::f::G;\n/* crate::h */ let w = '{'; crate::i::J";
    assert_eq!(deps_of(src), ["a", "e", "f", "i"].into_iter().map(String::from).collect::<BTreeSet<_>>());
    let lib = "pub use app::{App, Config};\npub use errors::{Error, Result as R};\npub use bundle::ASYNC_TIMEOUT;";
    let r = reexports(lib);
    assert_eq!(r.get("App").map(String::as_str), Some("app"));
    assert_eq!(r.get("R").map(String::as_str), Some("errors"));
    assert_eq!(r.get("ASYNC_TIMEOUT").map(String::as_str), Some("bundle"));
}
