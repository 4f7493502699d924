//! The crate's modules depend on one another without circles: read from
//! the sources, every `crate::<module>` path of a module (its `use`s and
//! its inline paths; a submodule counts as its parent, test-only modules
//! aside) names a module below it. The builder modules reach the engine
//! session through `session`, never through `app`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

fn strip_comments(src: &str) -> String {
    src.lines().map(|l| l.split("//").next().unwrap_or("")).collect::<Vec<_>>().join("\n")
}

fn ident(s: &str) -> String {
    s.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect()
}

/// The modules src names: `crate::x` paths and `use crate::{x, y::z}` groups.
fn deps_of(src: &str) -> BTreeSet<String> {
    let src = strip_comments(src);
    let mut out = BTreeSet::new();
    for (i, _) in src.match_indices("crate::") {
        let rest = &src[i + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let body = &group[..group.find('}').unwrap_or(group.len())];
            for part in body.split(',') {
                let name = ident(part.trim());
                if !name.is_empty() {
                    out.insert(name);
                }
            }
        } else {
            out.insert(ident(rest));
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
        // Its submodules (src/<stem>/*.rs) count as the module, test-only ones aside.
        let skip = test_modules(&text);
        if let Ok(dir) = std::fs::read_dir(src.join(&stem)) {
            for sub in dir {
                let sub = sub.expect("an entry").path();
                let name = sub.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
                if sub.extension().is_some_and(|e| e == "rs") && !skip.contains(&name) {
                    deps.extend(deps_of(&std::fs::read_to_string(&sub).expect("readable")));
                }
            }
        }
        g.insert(stem, deps);
    }
    let known: BTreeSet<String> = g.keys().cloned().collect();
    for (m, deps) in g.iter_mut() {
        deps.retain(|d| known.contains(d) && d != m);
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
}
