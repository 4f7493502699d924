//! The SDK against a REAL engine that requires a token and serves TLS
//! (`$POLYSTREAMS_ENGINE`, else `bin/polystreams`; a self-signed
//! certificate from openssl).

use std::io::{BufRead, BufReader, Read};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use polystreams::{App, State};

const TOKEN: &str = "rust-token-2a9e-planted";

struct Engine {
    child: Child,
    url: String,
    ca: PathBuf,
}

impl Drop for Engine {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn secure_engine() -> Engine {
    let bin = std::env::var_os("POLYSTREAMS_ENGINE")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../bin/polystreams"));
    assert!(bin.is_file(), "the engine binary {} does not exist: `make build`", bin.display());
    let dir = std::env::temp_dir().join(format!("polystreams-rust-sec-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (ca, key) = (dir.join("cert.pem"), dir.join("key.pem"));
    let ok = Command::new("openssl")
        .args(["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "1"])
        .args(["-subj", "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"])
        .args(["-addext", "basicConstraints=critical,CA:FALSE", "-keyout"])
        .arg(&key)
        .arg("-out")
        .arg(&ca)
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(ok.success(), "openssl failed");
    let mut child = Command::new(bin)
        .args(["dev", "--listen", "127.0.0.1:0", "--broker", "127.0.0.1:0", "--exit-on-stdin-close", "--state-dir"])
        .arg(dir.join("state"))
        .arg("--tls-cert")
        .arg(&ca)
        .arg("--tls-key")
        .arg(&key)
        .env("POLYSTREAMS_TOKEN", TOKEN)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    let url = loop {
        line.clear();
        assert!(out.read_line(&mut line).unwrap() > 0, "the engine exited");
        if let Some(u) = line.trim().strip_prefix("polystreams: engine ") {
            break u.to_owned();
        }
    };
    std::thread::spawn(move || {
        let _ = out.read_to_end(&mut Vec::new());
    });
    Engine { child, url, ca }
}

#[test]
fn the_token_and_ca_file_open_a_session_and_anything_else_is_unauthenticated() {
    let e = secure_engine();
    // The engine reports https://127.0.0.1:<port>: rustls verifies the
    // certificate's IP address SAN (and, below, its DNS name).
    assert!(e.url.starts_with("https://127.0.0.1:"), "{}", e.url);
    std::env::remove_var("POLYSTREAMS_TOKEN");
    for token in [None, Some("wrong-token")] {
        let mut b = App::builder("sec-rust").engine(&e.url).ca_file(&e.ca);
        if let Some(t) = token {
            b = b.token(t);
        }
        let Err(err) = b.build() else { panic!("a session without the right token") };
        assert_eq!(err.code(), "unauthenticated", "{err}");
        assert!(!err.to_string().contains(TOKEN));
    }
    // Without the CA file the self-signed certificate is not trusted.
    let Err(err) = App::builder("sec-rust").engine(&e.url).token(TOKEN).build() else {
        panic!("a session trusting an unknown certificate")
    };
    assert_eq!(err.code(), "unavailable", "{err}");

    let app = App::builder("sec-rust").engine(&e.url).ca_file(&e.ca).token(TOKEN).build().expect("the right token");
    assert_eq!(app.state().unwrap(), State::Created);
    app.close(Duration::from_secs(30));
    let by_name = e.url.replace("https://127.0.0.1:", "https://localhost:");
    let app = App::builder("sec-rust").engine(&by_name).ca_file(&e.ca).token(TOKEN).build().expect("by host name");
    assert_eq!(app.state().unwrap(), State::Created);
    app.close(Duration::from_secs(30));
}
