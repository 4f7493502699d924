//! Finding and spawning the engine binary.
//!
//! An [`App`](crate::App) given no engine URL runs its own engine as a child
//! process: `polystreams dev` (with an embedded Kafka broker) when no brokers
//! are given, else `polystreams serve --brokers ...`. The child binds free
//! loopback ports and prints where it serves; it exits when its standard
//! input closes, so it never outlives this process however it ends.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::errors::{Error, Result};

const BROKER_LINE: &str = "polystreams: broker ";
const ENGINE_LINE: &str = "polystreams: engine ";

/// The engine binary: `$POLYSTREAMS_ENGINE`, else `polystreams` on `PATH`,
/// else `bin/polystreams` in a directory above this crate (a checkout of the
/// repository, after `make build`), else, when this crate sits in a checkout
/// of the repository and `go` is on `PATH`, that binary built now (once; a
/// minute or more) with this crate's version stamped in.
///
/// The crate carries no binary: a crate is source, built for whatever target
/// cargo builds for, and a 20 MB engine per platform does not belong in it
/// (npm and pip packages do carry one; see docs/deploy.md).
pub fn find_engine() -> Result<PathBuf> {
    if let Some(env) = std::env::var_os("POLYSTREAMS_ENGINE") {
        let p = PathBuf::from(&env);
        if !p.is_file() {
            return Err(Error::EngineStart {
                message: format!("POLYSTREAMS_ENGINE={} is not an executable file", p.display()),
            });
        }
        return Ok(p);
    }
    if let Some(path) = std::env::var_os("PATH") {
        for dir in std::env::split_paths(&path) {
            let p = dir.join("polystreams");
            if p.is_file() {
                return Ok(p);
            }
        }
    }
    for dir in Path::new(env!("CARGO_MANIFEST_DIR")).ancestors() {
        let p = dir.join("bin").join("polystreams");
        if p.is_file() {
            return Ok(p);
        }
    }
    if let Some(repo) = Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .find(|d| d.join("go.mod").is_file() && d.join("core/cmd/polystreams").is_dir())
    {
        return build_engine(repo);
    }
    Err(Error::EngineStart {
        message: "the polystreams engine binary was not found: set POLYSTREAMS_ENGINE to its path, put `polystreams` on \
                  PATH, give AppBuilder::engine(\"http://host:port\") of a running engine, or build it in the repository \
                  with `make build`"
            .to_owned(),
    })
}

/// Builds `bin/polystreams` in the repository checkout `repo` with `go`, as
/// `make build` does, stamping this crate's version.
fn build_engine(repo: &Path) -> Result<PathBuf> {
    let out = repo.join("bin").join("polystreams");
    eprintln!("polystreams: building the engine from {} (once; `make build` does the same)", repo.display());
    let status = Command::new("go")
        .current_dir(repo)
        .args(["build", "-ldflags"])
        .arg(format!("-X main.version={}", env!("CARGO_PKG_VERSION")))
        .arg("-o")
        .arg(&out)
        .arg("./core/cmd/polystreams")
        .status()
        .map_err(|e| Error::EngineStart {
            message: format!(
                "the polystreams engine binary was not found and `go build` in {} could not run ({e}): set \
                 POLYSTREAMS_ENGINE to its path or put `polystreams` on PATH",
                repo.display()
            ),
        })?;
    if !status.success() || !out.is_file() {
        return Err(Error::EngineStart {
            message: format!("`go build ./core/cmd/polystreams` in {} failed ({status})", repo.display()),
        });
    }
    Ok(out)
}

/// The part of a version that must match: major, and minor too before 1.0.
fn compat(version: &str) -> Option<(u64, Option<u64>)> {
    let mut parts = version.split('.');
    let major: u64 = parts.next()?.parse().ok()?;
    let minor: u64 = parts.next()?.chars().take_while(char::is_ascii_digit).collect::<String>().parse().ok()?;
    Some((major, if major == 0 { Some(minor) } else { None }))
}

/// Fails with [`Error::FailedPrecondition`] naming both versions when the
/// engine's (`OpenSessionResponse.version`) is incompatible with this SDK's
/// `sdk`. Engine and SDKs share one version; they are compatible when their
/// major versions (and, before 1.0, their minor versions) are equal. An
/// engine that reports none (older than the field) or `dev` (an unstamped
/// build) is accepted.
pub(crate) fn check_engine_version(engine: &str, sdk: &str) -> Result<()> {
    if engine.is_empty() || engine == "dev" || compat(engine) == compat(sdk) {
        return Ok(());
    }
    let same = if sdk.starts_with("0.") { "major and minor" } else { "major" };
    Err(Error::FailedPrecondition {
        message: format!(
            "engine version {engine} is incompatible with this SDK's version {sdk}: engine, protocol and SDKs share \
             one version, and an SDK needs an engine of the same {same} version"
        ),
    })
}

/// An engine child process.
pub(crate) struct EngineProcess {
    child: Child,
    stdin: Option<ChildStdin>,
    pub(crate) url: String,
    /// The embedded broker's address (`dev` only).
    pub(crate) broker: Option<String>,
}

impl EngineProcess {
    pub(crate) fn spawn(binary: &Path, brokers: Option<&str>, start_timeout: Duration) -> Result<EngineProcess> {
        let mut cmd = Command::new(binary);
        match brokers {
            Some(b) => cmd.args(["serve", "--brokers", b]),
            None => cmd.args(["dev", "--broker", "127.0.0.1:0"]),
        };
        cmd.args(["--listen", "127.0.0.1:0", "--exit-on-stdin-close"]);
        // Its own process group: a Ctrl-C at the terminal reaches this
        // process (which stops cleanly), not the engine mid-commit.
        cmd.process_group(0);
        cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
        let show = format!("engine `{}`", binary.display());
        let mut child = cmd.spawn().map_err(|e| Error::EngineStart {
            message: format!("cannot start the engine {}: {e}", binary.display()),
        })?;
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().expect("piped");
        let stderr = child.stderr.take().expect("piped");
        let tail: Arc<Mutex<VecDeque<String>>> = Arc::default();
        {
            // Drained always (a full pipe would block the engine); the tail is
            // kept for start errors, the rest goes to this process's stderr
            // when POLYSTREAMS_ENGINE_LOG is set.
            let tail = tail.clone();
            let echo = std::env::var_os("POLYSTREAMS_ENGINE_LOG").is_some();
            std::thread::Builder::new()
                .name("polystreams-engine-stderr".into())
                .spawn(move || {
                    for line in BufReader::new(stderr).lines().map_while(|l| l.ok()) {
                        if echo {
                            eprintln!("{line}");
                        }
                        let mut t = tail.lock().unwrap_or_else(|e| e.into_inner());
                        if t.len() == 40 {
                            t.pop_front();
                        }
                        t.push_back(line);
                    }
                })
                .map_err(|e| Error::EngineStart { message: format!("cannot start a thread: {e}") })?;
        }
        let (tx, rx) = mpsc::channel::<String>();
        std::thread::Builder::new()
            .name("polystreams-engine-stdout".into())
            .spawn(move || {
                // Once the address is read nobody listens: the lines are
                // dropped, but the pipe is drained so the engine never blocks.
                for line in BufReader::new(stdout).lines().map_while(|l| l.ok()) {
                    let _ = tx.send(line);
                }
            })
            .map_err(|e| Error::EngineStart { message: format!("cannot start a thread: {e}") })?;
        let mut engine = EngineProcess { child, stdin, url: String::new(), broker: None };
        let deadline = Instant::now() + start_timeout;
        let tail_text = |tail: &Arc<Mutex<VecDeque<String>>>| {
            std::thread::sleep(Duration::from_millis(100));
            let t = tail.lock().unwrap_or_else(|e| e.into_inner());
            if t.is_empty() {
                String::new()
            } else {
                format!("; its last output:\n{}", t.iter().cloned().collect::<Vec<_>>().join("\n"))
            }
        };
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match rx.recv_timeout(left) {
                Ok(line) => {
                    if let Some(b) = line.strip_prefix(BROKER_LINE) {
                        engine.broker = Some(b.trim().to_owned());
                    } else if let Some(u) = line.strip_prefix(ENGINE_LINE) {
                        engine.url = u.trim().to_owned();
                        return Ok(engine);
                    }
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    engine.close(Duration::from_secs(5));
                    return Err(Error::EngineStart {
                        message: format!(
                            "{show} did not report its address within {start_timeout:?}{}",
                            tail_text(&tail)
                        ),
                    });
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    let status = engine.child.wait().map(|s| s.to_string()).unwrap_or_else(|e| e.to_string());
                    return Err(Error::EngineStart {
                        message: format!("{show} exited ({status}) before serving{}", tail_text(&tail)),
                    });
                }
            }
        }
    }

    /// Stops the engine: closes its stdin, waits up to `timeout`, then SIGKILL.
    pub(crate) fn close(&mut self, timeout: Duration) {
        self.stdin.take();
        if let Ok(Some(_)) = self.child.try_wait() {
            return;
        }
        // The standard library can only SIGKILL: closing stdin (above;
        // --exit-on-stdin-close) asks the engine to stop cleanly first.
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for EngineProcess {
    fn drop(&mut self) {
        self.close(Duration::from_secs(15));
    }
}

/// The line an App that spawned `polystreams dev` prints when it starts:
/// where the embedded broker is, and a way to feed it records (kcat, one
/// record per line of input).
pub(crate) fn feed_hint(broker: &str, topics: &[String], commit_interval_ms: &str) -> String {
    let topic = topics.first().map_or("<topic>", String::as_str);
    format!(
        "polystreams: embedded Kafka broker at {broker} (app.brokers(); missing topics are created, results commit \
         every {commit_interval_ms} ms); feed it: printf 'to be or not to be\\n' | kcat -P -b {broker} -t {topic}"
    )
}

#[cfg(test)]
mod tests {
    use super::check_engine_version;

    #[test]
    fn engine_version_compatibility() {
        for (engine, sdk) in
            [("0.1.0", "0.1.0"), ("0.1.7", "0.1.0"), ("1.4.0", "1.0.2"), ("dev", "0.1.0"), ("", "0.1.0")]
        {
            assert!(check_engine_version(engine, sdk).is_ok(), "{engine} vs {sdk}");
        }
        for (engine, sdk) in [("0.2.0", "0.1.0"), ("99.0.0", "0.1.0"), ("2.0.0", "1.3.0")] {
            let msg = check_engine_version(engine, sdk).expect_err("incompatible").to_string();
            assert!(
                msg.contains(&format!("engine version {engine} ")) && msg.contains(&format!("version {sdk}:")),
                "{msg}"
            );
        }
    }
}
