//! The README program runs verbatim: the first ```rust block of
//! sdk-rust/README.md becomes `src/main.rs` of a fresh binary crate that
//! depends on this one by path, is built with cargo and run against its own
//! engine and embedded broker, fed a few lines with kcat; its word counts
//! are read back with kcat.

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

/// The last count per word on `topic` (values as Serdes.Long), read with
/// kcat until it equals WANT or `timeout` passes.
fn read_counts(broker: &str, topic: &str, timeout: Duration) -> BTreeMap<String, i64> {
    let want: BTreeMap<String, i64> = WANT.iter().map(|(w, n)| ((*w).to_owned(), *n)).collect();
    let deadline = Instant::now() + timeout;
    loop {
        let out = Command::new("kcat")
            .args(["-b", broker, "-C", "-t", topic, "-o", "beginning", "-e", "-q", "-s", "value=q", "-f", "%k\t%s\n"])
            .stderr(Stdio::null())
            .output()
            .expect("kcat (apt kcat) runs");
        let mut last = BTreeMap::new();
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            if let Some((k, v)) = line.split_once('\t') {
                last.insert(k.to_owned(), v.trim().parse::<i64>().unwrap_or(-1));
            }
        }
        if last == want || Instant::now() > deadline {
            return last;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
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

#[test]
fn readme_program_runs_verbatim() {
    let engine = engine();
    let (dir, bin) = build_program("wordcount", &first_block(&crate_dir().join("README.md"), "rust"), "", "");
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
            .expect("the README program starts"),
    );
    let (tx, rx) = mpsc::channel();
    let stderr = child.0.stderr.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(|l| l.ok()) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let stdout = child.0.stdout.take().unwrap();
    let (out_tx, out_rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(|l| l.ok()) {
            if out_tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut seen = String::new();
    let (broker, topic) = loop {
        let line = rx
            .recv_timeout(Duration::from_secs(60))
            .unwrap_or_else(|_| panic!("the program never printed the embedded broker's address; its stderr:\n{seen}"));
        seen.push_str(&line);
        seen.push('\n');
        if let Some(rest) = line.strip_prefix("polystreams: embedded Kafka broker at ") {
            let broker = rest.split_whitespace().next().unwrap().to_owned();
            let topic = line.rsplit(" -t ").next().unwrap().trim().to_owned();
            break (broker, topic);
        }
    };
    assert_eq!(topic, "lines");
    let mut kcat = Command::new("kcat")
        .args(["-b", &broker, "-P", "-t", &topic, "-z", "none"])
        .stdin(Stdio::piped())
        .spawn()
        .expect("kcat (apt kcat) runs");
    let mut stdin = kcat.stdin.take().unwrap();
    for l in LINES {
        writeln!(stdin, "{l}").unwrap();
    }
    drop(stdin);
    assert!(kcat.wait().unwrap().success(), "kcat produced to {topic}");
    let got = read_counts(&broker, "word-counts", Duration::from_secs(60));
    let want: BTreeMap<String, i64> = WANT.iter().map(|(w, n)| ((*w).to_owned(), *n)).collect();
    assert_eq!(got, want, "the README program's word counts");
    let mut out = String::new();
    while !out.contains("Source: KSTREAM-SOURCE-0000000000 (topics: [lines])") {
        match out_rx.recv_timeout(Duration::from_secs(10)) {
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

/// The README's async example (feature "tokio", tokio's timer), built and
/// run against its own engine: orders in with kcat, checked orders out.
#[test]
fn readme_async_example_runs_verbatim() {
    let engine = engine();
    let source = section_block(&crate_dir().join("README.md"), "### Async operators", "rust");
    let (dir, bin) = build_program(
        "check_orders",
        &source,
        ", features = [\"tokio\"]",
        "tokio = { version = \"1\", features = [\"time\"] }\n",
    );
    let tmp = dir.join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let mut child = Killed(
        Command::new(bin)
            .env("POLYSTREAMS_ENGINE", &engine)
            .env_remove("POLYSTREAMS_URL")
            .env("TMPDIR", &tmp)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .process_group(0)
            .spawn()
            .expect("the async example starts"),
    );
    let stderr = BufReader::new(child.0.stderr.take().unwrap());
    let mut seen = String::new();
    let mut lines = stderr.lines().map_while(|l| l.ok());
    let (broker, topic) = loop {
        let line = lines.next().unwrap_or_else(|| panic!("the example never printed the broker's address:\n{seen}"));
        seen.push_str(&line);
        seen.push('\n');
        if let Some(rest) = line.strip_prefix("polystreams: embedded Kafka broker at ") {
            let broker = rest.split_whitespace().next().unwrap().to_owned();
            break (broker, line.rsplit(" -t ").next().unwrap().trim().to_owned());
        }
    };
    std::thread::spawn(move || lines.for_each(drop)); // keep draining its stderr
    assert_eq!(topic, "orders");
    let mut kcat = Command::new("kcat")
        .args(["-b", &broker, "-P", "-t", &topic, "-K", "\t", "-z", "none"])
        .stdin(Stdio::piped())
        .spawn()
        .expect("kcat (apt kcat) runs");
    let mut stdin = kcat.stdin.take().unwrap();
    for i in 0..5 {
        writeln!(stdin, "o{i}\torder {i}").unwrap();
    }
    drop(stdin);
    assert!(kcat.wait().unwrap().success(), "kcat produced to {topic}");
    let want: BTreeMap<String, String> = (0..5).map(|i| (format!("o{i}"), format!("order {i} checked"))).collect();
    let deadline = Instant::now() + Duration::from_secs(60);
    let got = loop {
        let out = Command::new("kcat")
            .args(["-b", &broker, "-C", "-t", "checked-orders", "-o", "beginning", "-e", "-q", "-f", "%k\t%s\n"])
            .stderr(Stdio::null())
            .output()
            .expect("kcat runs");
        let got: BTreeMap<String, String> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| l.split_once('\t'))
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect();
        if got == want || Instant::now() > deadline {
            break got;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    assert_eq!(got, want, "the async example's checked orders");
}

/// The README's processor example (a click counter with a wall-clock
/// punctuator that emits and clears its store), built and run against its
/// own engine and embedded broker: clicks in with kcat; the counts it emits
/// (each punctuation's since the last) add up to the clicks per page.
#[test]
fn readme_processor_example_runs_verbatim() {
    let engine = engine();
    let source = section_block(&crate_dir().join("README.md"), "### Processors", "rust");
    let (dir, bin) = build_program("click_counter", &source, "", "");
    let tmp = dir.join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let mut child = Killed(
        Command::new(bin)
            .env("POLYSTREAMS_ENGINE", &engine)
            .env_remove("POLYSTREAMS_URL")
            .env("TMPDIR", &tmp)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .process_group(0)
            .spawn()
            .expect("the processor example starts"),
    );
    let stderr = BufReader::new(child.0.stderr.take().unwrap());
    let mut seen = String::new();
    let mut lines = stderr.lines().map_while(|l| l.ok());
    let (broker, topic) = loop {
        let line = lines.next().unwrap_or_else(|| panic!("the example never printed the broker's address:\n{seen}"));
        seen.push_str(&line);
        seen.push('\n');
        if let Some(rest) = line.strip_prefix("polystreams: embedded Kafka broker at ") {
            let broker = rest.split_whitespace().next().unwrap().to_owned();
            break (broker, line.rsplit(" -t ").next().unwrap().trim().to_owned());
        }
    };
    std::thread::spawn(move || lines.for_each(drop)); // keep draining its stderr
    assert_eq!(topic, "clicks");
    let mut kcat = Command::new("kcat")
        .args(["-b", &broker, "-P", "-t", &topic, "-K", "\t", "-z", "none"])
        .stdin(Stdio::piped())
        .spawn()
        .expect("kcat (apt kcat) runs");
    let mut stdin = kcat.stdin.take().unwrap();
    for (user, page) in [("u1", "home"), ("u2", "home"), ("u1", "about"), ("u3", "home")] {
        writeln!(stdin, "{user}\t{page}").unwrap();
    }
    drop(stdin);
    assert!(kcat.wait().unwrap().success(), "kcat produced to {topic}");
    let want: BTreeMap<String, i64> = [("about".to_owned(), 1), ("home".to_owned(), 3)].into();
    let deadline = Instant::now() + Duration::from_secs(60);
    let got = loop {
        let out = Command::new("kcat")
            .args([
                "-b",
                &broker,
                "-C",
                "-t",
                "click-counts",
                "-o",
                "beginning",
                "-e",
                "-q",
                "-s",
                "value=q",
                "-f",
                "%k\t%s\n",
            ])
            .stderr(Stdio::null())
            .output()
            .expect("kcat runs");
        let mut got = BTreeMap::new();
        for (k, v) in String::from_utf8_lossy(&out.stdout).lines().filter_map(|l| l.split_once('\t')) {
            *got.entry(k.to_owned()).or_insert(0) += v.trim().parse::<i64>().unwrap_or(-1000);
        }
        if got == want || Instant::now() > deadline {
            break got;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    assert_eq!(got, want, "the processor example's counts, summed over its punctuations");
}
