// The README's program, in a fresh cargo project depending on the crate by
// path (tools/dist/test.sh). Added around it: commit.interval.ms=100, three
// lines seeded with kcat, and a thread that reads word-counts back with kcat,
// prints the counts and stops the app.
use std::collections::BTreeMap;
use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use polystreams::{App, Config};

const WANT: &str = "brown=1 dog=1 end=1 fox=1 lazy=1 quick=1 the=3";

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let app = App::builder("wordcount").config(Config::new().set("commit.interval.ms", "100")).build()?;
    app.stream::<(), String>("lines")?
        .flat_map_values(|line| line.split_whitespace().map(str::to_owned).collect::<Vec<_>>())?
        .group_by(|_, word: &String| word.clone())?
        .count()?
        .to_stream()?
        .to("word-counts")?;
    println!("{}", app.describe()?);
    let brokers = app.brokers().expect("an embedded broker").to_owned();
    let mut kcat = Command::new("kcat").args(["-P", "-b", &brokers, "-t", "lines"]).stdin(Stdio::piped()).spawn()?;
    kcat.stdin.take().unwrap().write_all(b"the quick brown fox\nthe lazy dog\nthe end\n")?;
    assert!(kcat.wait()?.success());
    let checker = app.clone();
    let check = std::thread::spawn(move || {
        let (deadline, mut got) = (Instant::now() + Duration::from_secs(90), String::new());
        while got != WANT && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(500));
            let out = Command::new("kcat")
                .args(["-C", "-b", &brokers, "-t", "word-counts", "-e", "-q", "-s", "value=q", "-f", "%k=%s\n"])
                .output()
                .expect("kcat");
            let counts: BTreeMap<String, String> = String::from_utf8_lossy(&out.stdout)
                .lines()
                .filter_map(|l| l.split_once('=').map(|(k, v)| (k.to_owned(), v.to_owned())))
                .collect();
            got = counts.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(" ");
        }
        println!("counts: {got}");
        checker.stop();
    });
    app.run()?;
    check.join().unwrap();
    Ok(())
}
