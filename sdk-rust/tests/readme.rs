//! The README programs run verbatim: the first ```rust block of
//! sdk-rust/README.md (and of the sections below) becomes `src/main.rs` of a
//! fresh binary crate that depends on this one by path, is built with cargo
//! and run against its own engine and embedded broker (one runner,
//! [`Program`]), fed records with kcat; what it writes is read back with
//! kcat.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

const LINES: &[&str] = &["to be or not to be", "to do is to be"];
const WANT: &[(&str, i64)] = &[("be", 3), ("do", 1), ("is", 1), ("not", 1), ("or", 1), ("to", 4)];

fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn engine() -> PathBuf {
    let p = std::env::var_os("POLYSTREAMS_ENGINE")
        .map(PathBuf::from)
        .unwrap_or_else(|| crate_dir().join("../bin/polystreams"));
    assert!(p.is_file(), "the polystreams engine binary {} does not exist: `make build`", p.display());
    p
}

/// The first fenced code block of `readme` in language `lang`.
fn first_block(readme: &Path, lang: &str) -> String {
    let text = std::fs::read_to_string(readme).unwrap();
    let open = format!("```{lang}\n");
    let start = text.find(&open).unwrap_or_else(|| panic!("{} has no {open} block", readme.display())) + open.len();
    let end = text[start..].find("\n```").expect("the block ends") + start + 1;
    text[start..end].to_owned()
}

struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn readme_opens_with_its_title_then_the_program() {
    let text = std::fs::read_to_string(crate_dir().join("README.md")).unwrap();
    assert!(text.starts_with("# polystreams for Rust\n\n```rust\n"), "{}", &text[..80.min(text.len())]);
}

/// Builds `source` as `src/main.rs` of a binary crate `name` that depends on
/// this one by path (`polystreams` given as `polystreams_dep`'s table, plus
/// `more_deps` lines); answers its directory and the binary.
fn build_program(name: &str, source: &str, polystreams_dep: &str, more_deps: &str) -> (PathBuf, PathBuf) {
    // Under target/, so that cargo reads this checkout's .cargo/config.toml
    // (if any) as it does for the crate; built into the crate's target dir
    // (cargo does not hold its lock while tests run), sharing what it can.
    let target = crate_dir().join("target");
    let dir = target.join(format!("readme-{name}"));
    let _ = std::fs::remove_dir_all(dir.join("src"));
    std::fs::create_dir_all(dir.join("src")).unwrap();
    std::fs::write(dir.join("src/main.rs"), source).unwrap();
    std::fs::write(
        dir.join("Cargo.toml"),
        format!(
            "[package]\nname = \"{name}\"\nversion = \"0.0.0\"\nedition = \"2021\"\npublish = false\n\n\
             [dependencies]\npolystreams = {{ path = {:?}{polystreams_dep} }}\n{more_deps}\n[workspace]\n",
            crate_dir()
        ),
    )
    .unwrap();
    std::fs::copy(crate_dir().join("Cargo.lock"), dir.join("Cargo.lock")).unwrap();
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let build = Command::new(&cargo)
        .args(["build", "--quiet"])
        .current_dir(&dir)
        .env("CARGO_TARGET_DIR", &target)
        .output()
        .expect("cargo runs");
    assert!(
        build.status.success(),
        "the README program {name} does not build:\n{}",
        String::from_utf8_lossy(&build.stderr)
    );
    (dir, target.join("debug").join(name))
}

/// A README program running against its own engine and embedded broker,
/// killed (with its process group) when dropped.
struct Program {
    _child: Killed,
    broker: String,
    /// Its standard output, line by line.
    stdout: mpsc::Receiver<String>,
}

impl Program {
    /// Builds `source` (see [`build_program`]) and runs it until it prints
    /// the embedded broker's address; the topic it prints must be `topic`.
    fn start(name: &str, source: &str, polystreams_dep: &str, more_deps: &str, topic: &str) -> Program {
        let engine = engine();
        let (dir, bin) = build_program(name, source, polystreams_dep, more_deps);
        let tmp = dir.join("tmp");
        std::fs::create_dir_all(&tmp).unwrap();
        let mut child = Killed(
            Command::new(bin)
                .env("POLYSTREAMS_ENGINE", &engine)
                .env_remove("POLYSTREAMS_URL")
                .env("TMPDIR", &tmp)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .process_group(0)
                .spawn()
                .unwrap_or_else(|e| panic!("the README program {name} does not start: {e}")),
        );
        let (tx, rx) = mpsc::channel();
        let stderr = child.0.stderr.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(|l| l.ok()) {
                let _ = tx.send(line); // keeps draining once nobody listens
            }
        });
        let stdout = child.0.stdout.take().unwrap();
        let (out_tx, out_rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(|l| l.ok()) {
                let _ = out_tx.send(line);
            }
        });
        let mut seen = String::new();
        let (broker, printed) = loop {
            let line = rx.recv_timeout(Duration::from_secs(60)).unwrap_or_else(|_| {
                panic!("the program {name} never printed the embedded broker's address; its stderr:\n{seen}")
            });
            seen.push_str(&line);
            seen.push('\n');
            if let Some(rest) = line.strip_prefix("polystreams: embedded Kafka broker at ") {
                let broker = rest.split_whitespace().next().unwrap().to_owned();
                break (broker, line.rsplit(" -t ").next().unwrap().trim().to_owned());
            }
        };
        assert_eq!(printed, topic, "the topic {name} prints to produce to");
        Program { _child: child, broker, stdout: out_rx }
    }

    /// Produces `lines` to topic with kcat (`key\tvalue` lines when keyed).
    fn produce(&self, topic: &str, lines: &[String], keyed: bool) {
        let mut args = vec!["-b", &self.broker, "-P", "-t", topic, "-z", "none"];
        if keyed {
            args.extend(["-K", "\t"]);
        }
        let mut kcat = Command::new("kcat").args(args).stdin(Stdio::piped()).spawn().expect("kcat (apt kcat) runs");
        let mut stdin = kcat.stdin.take().unwrap();
        for l in lines {
            writeln!(stdin, "{l}").unwrap();
        }
        drop(stdin);
        assert!(kcat.wait().unwrap().success(), "kcat produced to {topic}");
    }

    /// Reads topic from the beginning with kcat (`key\tvalue` lines; the
    /// value a long when `long_values`) until `done` holds of the rows or a
    /// minute passes; answers the last rows read.
    fn consume(
        &self,
        topic: &str,
        long_values: bool,
        done: impl Fn(&[(String, String)]) -> bool,
    ) -> Vec<(String, String)> {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let mut args = vec!["-b", &self.broker, "-C", "-t", topic, "-o", "beginning", "-e", "-q", "-f", "%k\t%s\n"];
            if long_values {
                args.extend(["-s", "value=q"]);
            }
            let out = Command::new("kcat").args(args).stderr(Stdio::null()).output().expect("kcat (apt kcat) runs");
            let rows: Vec<(String, String)> = String::from_utf8_lossy(&out.stdout)
                .lines()
                .filter_map(|l| l.split_once('\t'))
                .map(|(k, v)| (k.to_owned(), v.trim().to_owned()))
                .collect();
            if done(&rows) || Instant::now() > deadline {
                return rows;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

/// The last value per key of rows.
fn last_per_key(rows: &[(String, String)]) -> BTreeMap<String, String> {
    rows.iter().cloned().collect()
}

#[test]
fn readme_program_runs_verbatim() {
    let source = first_block(&crate_dir().join("README.md"), "rust");
    let p = Program::start("wordcount", &source, "", "", "lines");
    p.produce("lines", &LINES.iter().map(|l| (*l).to_owned()).collect::<Vec<_>>(), false);
    let want: BTreeMap<String, String> = WANT.iter().map(|(w, n)| ((*w).to_owned(), n.to_string())).collect();
    let got = last_per_key(&p.consume("word-counts", true, |rows| last_per_key(rows) == want));
    assert_eq!(got, want, "the README program's word counts");
    let mut out = String::new();
    while !out.contains("Source: KSTREAM-SOURCE-0000000000 (topics: [lines])") {
        match p.stdout.recv_timeout(Duration::from_secs(10)) {
            Ok(line) => out.push_str(&(line + "\n")),
            Err(_) => panic!("the program did not print describe(); its stdout:\n{out}"),
        }
    }
}

/// The first fenced code block in language `lang` after the line `heading`.
fn section_block(readme: &Path, heading: &str, lang: &str) -> String {
    let text = std::fs::read_to_string(readme).unwrap();
    let at = text.find(&format!("\n{heading}\n")).unwrap_or_else(|| panic!("{} has no {heading:?}", readme.display()));
    let open = format!("```{lang}\n");
    let start = text[at..].find(&open).expect("a block after the heading") + at + open.len();
    let end = text[start..].find("\n```").expect("the block ends") + start + 1;
    text[start..end].to_owned()
}

/// The README's suppress example is tests/readme_suppress.rs, which runs it.
#[test]
fn readme_suppress_example_is_the_test_that_runs() {
    let block = section_block(&crate_dir().join("README.md"), "#### Suppress until a time limit", "rust");
    let test = std::fs::read_to_string(crate_dir().join("tests").join("readme_suppress.rs")).unwrap();
    let body = test.split_once('\n').expect("a header line").1;
    assert_eq!(block, body, "README.md's suppress example and tests/readme_suppress.rs differ");
}

/// The README's timestamp extractor example is tests/readme_extractor.rs, which runs it.
#[test]
fn readme_extractor_example_is_the_test_that_runs() {
    let block = section_block(&crate_dir().join("README.md"), "### Timestamp extractors", "rust");
    let test = std::fs::read_to_string(crate_dir().join("tests").join("readme_extractor.rs")).unwrap();
    let body = test.split_once('\n').expect("a header line").1;
    assert_eq!(block, body, "README.md's timestamp extractor example and tests/readme_extractor.rs differ");
}

/// The README's routing example is tests/readme_routing.rs, which runs it.
#[test]
fn readme_routing_example_is_the_test_that_runs() {
    let block = section_block(&crate_dir().join("README.md"), "### Routing", "rust");
    let test = std::fs::read_to_string(crate_dir().join("tests").join("readme_routing.rs")).unwrap();
    let body = test.split_once('\n').expect("a header line").1;
    assert_eq!(block, body, "README.md's routing example and tests/readme_routing.rs differ");
}

/// The README's versioned store example is tests/readme_versioned_processor.rs, which runs it.
#[test]
fn readme_versioned_processor_example_is_the_test_that_runs() {
    let block = section_block(&crate_dir().join("README.md"), "#### A processor's versioned store", "rust");
    let test = std::fs::read_to_string(crate_dir().join("tests").join("readme_versioned_processor.rs")).unwrap();
    let body = test.split_once('\n').expect("a header line").1;
    assert_eq!(block, body, "README.md's versioned store example and tests/readme_versioned_processor.rs differ");
}

/// The README's topic pattern example is tests/readme_pattern.rs, which runs it.
#[test]
fn readme_pattern_example_is_the_test_that_runs() {
    let block = section_block(&crate_dir().join("README.md"), "### Topic patterns", "rust");
    let test = std::fs::read_to_string(crate_dir().join("tests").join("readme_pattern.rs")).unwrap();
    let body = test.split_once('\n').expect("a header line").1;
    assert_eq!(block, body, "README.md's topic pattern example and tests/readme_pattern.rs differ");
}

/// The README's async example with record metadata is tests/readme_metadata_async.rs, which runs it.
#[test]
fn readme_metadata_async_example_is_the_test_that_runs() {
    let block = section_block(&crate_dir().join("README.md"), "#### Async operators with record metadata", "rust");
    let test = std::fs::read_to_string(crate_dir().join("tests").join("readme_metadata_async.rs")).unwrap();
    let body = test.split_once('\n').expect("a header line").1;
    assert_eq!(block, body, "README.md's async metadata example and tests/readme_metadata_async.rs differ");
}

/// The README's async windowed fold example is tests/readme_async_folds.rs, which runs it.
#[test]
fn readme_async_folds_example_is_the_test_that_runs() {
    let block = section_block(&crate_dir().join("README.md"), "#### Async windowed and table folds", "rust");
    let test = std::fs::read_to_string(crate_dir().join("tests").join("readme_async_folds.rs")).unwrap();
    let body = test.split_once('\n').expect("a header line").1;
    assert_eq!(block, body, "README.md's async folds example and tests/readme_async_folds.rs differ");
}

/// The README's async example (feature "tokio", tokio's timer), built and
/// run against its own engine: orders in with kcat, checked orders out.
#[test]
fn readme_async_example_runs_verbatim() {
    let source = section_block(&crate_dir().join("README.md"), "### Async operators", "rust");
    let p = Program::start("check_orders", &source, TOKIO_FEATURE, TOKIO_DEP, "orders");
    p.produce("orders", &(0..5).map(|i| format!("o{i}\torder {i}")).collect::<Vec<_>>(), true);
    let want: BTreeMap<String, String> = (0..5).map(|i| (format!("o{i}"), format!("order {i} checked"))).collect();
    let got = last_per_key(&p.consume("checked-orders", false, |rows| last_per_key(rows) == want));
    assert_eq!(got, want, "the async example's checked orders");
}

/// The feature and the dependency of the examples that use tokio.
const TOKIO_FEATURE: &str = ", features = [\"tokio\"]";
const TOKIO_DEP: &str = "tokio = { version = \"1\", features = [\"time\"] }\n";

/// The README's async processor example: each user's orders numbered in
/// order, the count read and written around an await.
#[test]
fn readme_async_processor_example_runs_verbatim() {
    let source = section_block(&crate_dir().join("README.md"), "#### Async processors", "rust");
    let p = Program::start("number_orders", &source, TOKIO_FEATURE, TOKIO_DEP, "orders");
    let orders = [("u1", "book"), ("u2", "pen"), ("u1", "lamp"), ("u1", "desk")];
    p.produce("orders", &orders.iter().map(|(u, o)| format!("{u}\t{o}")).collect::<Vec<_>>(), true);
    let got = p.consume("numbered-orders", false, |rows| rows.len() >= orders.len());
    let want: Vec<(String, String)> = [("u1", "book #1"), ("u2", "pen #1"), ("u1", "lamp #2"), ("u1", "desk #3")]
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    let per_user = |rows: &[(String, String)], u: &str| -> Vec<String> {
        rows.iter().filter(|(k, _)| k == u).map(|(_, v)| v.clone()).collect()
    };
    for u in ["u1", "u2"] {
        assert_eq!(per_user(&got, u), per_user(&want, u), "the async processor example's numbered orders of {u}");
    }
}

/// The README's processor example (a click counter with a wall-clock
/// punctuator that emits and clears its store), built and run against its
/// own engine and embedded broker: clicks in with kcat; the counts it emits
/// (each punctuation's since the last) add up to the clicks per page.
#[test]
fn readme_processor_example_runs_verbatim() {
    let source = section_block(&crate_dir().join("README.md"), "### Processors", "rust");
    let p = Program::start("click_counter", &source, "", "", "clicks");
    let clicks = [("u1", "home"), ("u2", "home"), ("u1", "about"), ("u3", "home")];
    p.produce("clicks", &clicks.iter().map(|(u, page)| format!("{u}\t{page}")).collect::<Vec<_>>(), true);
    let want: BTreeMap<String, i64> = [("about".to_owned(), 1), ("home".to_owned(), 3)].into();
    let summed = |rows: &[(String, String)]| {
        let mut got = BTreeMap::new();
        for (k, v) in rows {
            *got.entry(k.clone()).or_insert(0) += v.parse::<i64>().unwrap_or(-1000);
        }
        got
    };
    let got = summed(&p.consume("click-counts", true, |rows| summed(rows) == want));
    assert_eq!(got, want, "the processor example's counts, summed over its punctuations");
}
