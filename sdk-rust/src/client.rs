//! A Connect-protocol unary client for EngineService over HTTP/1.1, on the
//! standard library alone (as the Python SDK's is on `http.client`).
//!
//! Every call is a POST of a binary protobuf body to
//! `/polystreams.v1alpha1.EngineService/<Method>` with `Content-Type:
//! application/proto` and `Connect-Protocol-Version: 1`. Errors come back as
//! non-200 responses with a JSON body `{"code": ..., "message": ...}` and
//! become the matching [`Error`]. Every RPC of the protocol is unary, so
//! nothing here needs HTTP/2. An `https://` engine is spoken to over TLS
//! (rustls), verified against a CA file; a token goes in
//! `Authorization: Bearer <token>` on every call.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use prost::Message;

use crate::error::{Error, Result};
use crate::pb;

const SERVICE: &str = "/polystreams.v1alpha1.EngineService/";
const USER_AGENT: &str = concat!("polystreams-rust/", env!("CARGO_PKG_VERSION"));

/// One engine's client. Safe for concurrent use: each call takes an idle
/// keep-alive connection from a small pool (or opens one) and puts it back
/// when done, so an interactive query does not wait behind a long-polling
/// Exchange. `timeout` bounds each call's socket reads and writes.
pub(crate) struct Client {
    url: String,
    addr: String,
    prefix: String,
    timeout: Duration,
    // "Authorization: Bearer <token>\r\n", or empty; never in an error.
    auth: String,
    tls: Option<(Arc<rustls::ClientConfig>, rustls::ServerName)>,
    idle: Mutex<Vec<BufReader<Stream>>>, // connections that completed a call
}

/// The system's CA bundle (Debian's), trusted when no CA file is given.
const SYSTEM_CAS: &str = "/etc/ssl/certs/ca-certificates.crt";

/// A connection to the engine, in the clear or over TLS.
enum Stream {
    Plain(TcpStream),
    Tls(Box<rustls::StreamOwned<rustls::ClientConnection, TcpStream>>),
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Stream::Plain(s) => s.read(buf),
            Stream::Tls(s) => s.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Stream::Plain(s) => s.write(buf),
            Stream::Tls(s) => s.write(buf),
        }
    }
    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Stream::Plain(s) => s.flush(),
            Stream::Tls(s) => s.flush(),
        }
    }
}

/// An HTTP response: status, body, and whether the server will close the connection.
struct Response {
    status: u16,
    body: Vec<u8>,
    close: bool,
}

impl Client {
    #[cfg(test)]
    pub(crate) fn new(url: &str, timeout: Duration) -> Result<Client> {
        Client::with_auth(url, timeout, None, None)
    }

    /// A client that sends `token` on every call and verifies an `https://`
    /// engine against the PEM certificates of `ca_file` (default: the
    /// system's CA bundle).
    pub(crate) fn with_auth(
        url: &str,
        timeout: Duration,
        token: Option<&str>,
        ca_file: Option<&Path>,
    ) -> Result<Client> {
        let bad = || Error::invalid(format!("engine URL {url:?}: want http://host:port or https://host:port"));
        let (https, rest) = match url.strip_prefix("https://") {
            Some(rest) => (true, rest),
            None => (false, url.strip_prefix("http://").ok_or_else(bad)?),
        };
        let (addr, path) = match rest.find('/') {
            Some(i) => (&rest[..i], rest[i..].trim_end_matches('/')),
            None => (rest, ""),
        };
        if addr.is_empty() || !addr.contains(':') {
            return Err(bad());
        }
        let tls = if https {
            let host = addr.rsplit_once(':').map_or(addr, |(h, _)| h).trim_start_matches('[').trim_end_matches(']');
            // rustls 0.20 (Debian's) verifies certificates by DNS name only.
            let name = match rustls::ServerName::try_from(host) {
                Ok(n @ rustls::ServerName::DnsName(_)) => n,
                _ => {
                    return Err(Error::invalid(format!(
                        "engine URL {url:?}: over https the Rust SDK verifies the engine's certificate by host name, \
                         not IP address: use a name the certificate holds (e.g. https://localhost:{})",
                        addr.rsplit_once(':').map_or("8086", |(_, p)| p)
                    )))
                }
            };
            Some((Arc::new(tls_config(ca_file.unwrap_or(Path::new(SYSTEM_CAS)))?), name))
        } else {
            None
        };
        Ok(Client {
            url: url.trim_end_matches('/').to_owned(),
            addr: addr.to_owned(),
            prefix: format!("{path}{SERVICE}"),
            timeout,
            auth: token.filter(|t| !t.is_empty()).map_or(String::new(), |t| format!("Authorization: Bearer {t}\r\n")),
            tls,
            idle: Mutex::new(Vec::new()),
        })
    }

    pub(crate) fn url(&self) -> &str {
        &self.url
    }

    /// Closes the idle connections.
    pub(crate) fn close(&self) {
        self.idle.lock().unwrap_or_else(|e| e.into_inner()).clear();
    }

    /// Calls EngineService/<method>.
    pub(crate) fn call<Req: Message, Resp: Message + Default>(&self, method: &str, req: &Req) -> Result<Resp> {
        let body = req.encode_to_vec();
        let mut head = format!(
            "POST {}{method} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/proto\r\n\
             Connect-Protocol-Version: 1\r\nUser-Agent: {USER_AGENT}\r\n{}Content-Length: {}\r\n\r\n",
            self.prefix,
            self.addr,
            self.auth,
            body.len()
        )
        .into_bytes();
        head.extend_from_slice(&body);
        let mut attempt = 0;
        let resp = loop {
            let (mut conn, reused) = self.take(attempt > 0).map_err(|e| self.unreachable(method, &e))?;
            match exchange(&mut conn, &head) {
                Ok(resp) => {
                    if !resp.close {
                        self.idle.lock().unwrap_or_else(|e| e.into_inner()).push(conn);
                    }
                    break resp;
                }
                // The engine closed the idle connection we reused: once more on a new one.
                Err(_) if reused && attempt == 0 => attempt += 1,
                Err(e) => return Err(self.unreachable(method, &e)),
            }
        };
        if resp.status != 200 {
            return Err(error_of(method, resp.status, &resp.body));
        }
        Resp::decode(resp.body.as_slice())
            .map_err(|e| Error::internal(format!("{method}: the engine's response does not parse: {e}")))
    }

    fn unreachable(&self, method: &str, e: &std::io::Error) -> Error {
        Error::from_code("unavailable", format!("{method}: engine at {} is unreachable: {e}", self.url))
    }

    fn take(&self, fresh: bool) -> std::io::Result<(BufReader<Stream>, bool)> {
        if !fresh {
            if let Some(c) = self.idle.lock().unwrap_or_else(|e| e.into_inner()).pop() {
                return Ok((c, true));
            }
        }
        let s = TcpStream::connect(&self.addr)?;
        s.set_nodelay(true)?;
        s.set_read_timeout(Some(self.timeout))?;
        s.set_write_timeout(Some(self.timeout))?;
        let s = match &self.tls {
            None => Stream::Plain(s),
            Some((config, name)) => {
                let conn = rustls::ClientConnection::new(config.clone(), name.clone())
                    .map_err(|e| std::io::Error::new(std::io::ErrorKind::Other, e))?;
                Stream::Tls(Box::new(rustls::StreamOwned::new(conn, s)))
            }
        };
        Ok((BufReader::with_capacity(64 * 1024, s), false))
    }

    // Typed methods, one per RPC.

    pub(crate) fn open_session(&self, r: &pb::OpenSessionRequest) -> Result<pb::OpenSessionResponse> {
        self.call("OpenSession", r)
    }
    pub(crate) fn register_function(&self, r: &pb::RegisterFunctionRequest) -> Result<pb::RegisterFunctionResponse> {
        self.call("RegisterFunction", r)
    }
    pub(crate) fn build(&self, r: &pb::BuildRequest) -> Result<pb::BuildResponse> {
        self.call("Build", r)
    }
    pub(crate) fn describe(&self, r: &pb::DescribeRequest) -> Result<pb::DescribeResponse> {
        self.call("Describe", r)
    }
    pub(crate) fn start(&self, r: &pb::StartRequest) -> Result<pb::StartResponse> {
        self.call("Start", r)
    }
    pub(crate) fn exchange(&self, r: &pb::ExchangeRequest) -> Result<pb::ExchangeResponse> {
        self.call("Exchange", r)
    }
    pub(crate) fn get_state(&self, r: &pb::GetStateRequest) -> Result<pb::GetStateResponse> {
        self.call("GetState", r)
    }
    pub(crate) fn stop(&self, r: &pb::StopRequest) -> Result<pb::StopResponse> {
        self.call("Stop", r)
    }
    pub(crate) fn query(&self, r: &pb::QueryRequest) -> Result<pb::QueryResponse> {
        self.call("Query", r)
    }
    pub(crate) fn pipe_input(&self, r: &pb::PipeInputRequest) -> Result<pb::PipeInputResponse> {
        self.call("PipeInput", r)
    }
    pub(crate) fn read_output(&self, r: &pb::ReadOutputRequest) -> Result<pb::ReadOutputResponse> {
        self.call("ReadOutput", r)
    }
    pub(crate) fn advance_wall_clock(&self, r: &pb::AdvanceWallClockRequest) -> Result<pb::AdvanceWallClockResponse> {
        self.call("AdvanceWallClock", r)
    }
}

fn invalid_data(msg: impl Into<String>) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidData, msg.into())
}

/// Writes one request and reads its response (HTTP/1.1: Content-Length or chunked).
fn exchange(conn: &mut BufReader<Stream>, request: &[u8]) -> std::io::Result<Response> {
    conn.get_mut().write_all(request)?;
    conn.get_mut().flush()?;
    let mut line = String::new();
    if conn.read_line(&mut line)? == 0 {
        return Err(std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "connection closed"));
    }
    let status: u16 = line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| invalid_data(format!("bad status line {:?}", line.trim_end())))?;
    let mut length: Option<usize> = None;
    let mut chunked = false;
    let mut close = line.starts_with("HTTP/1.0");
    loop {
        line.clear();
        if conn.read_line(&mut line)? == 0 {
            return Err(invalid_data("connection closed in the headers"));
        }
        let h = line.trim_end();
        if h.is_empty() {
            break;
        }
        if let Some((name, value)) = h.split_once(':') {
            let value = value.trim();
            match name.trim().to_ascii_lowercase().as_str() {
                "content-length" => length = Some(value.parse().map_err(|_| invalid_data("bad Content-Length"))?),
                "transfer-encoding" => chunked = value.eq_ignore_ascii_case("chunked"),
                "connection" => close = value.eq_ignore_ascii_case("close"),
                _ => {}
            }
        }
    }
    let mut body = Vec::new();
    if chunked {
        loop {
            line.clear();
            conn.read_line(&mut line)?;
            let size = usize::from_str_radix(line.trim().split(';').next().unwrap_or(""), 16)
                .map_err(|_| invalid_data("bad chunk size"))?;
            if size == 0 {
                // Trailers, then the blank line.
                loop {
                    line.clear();
                    if conn.read_line(&mut line)? == 0 || line.trim_end().is_empty() {
                        break;
                    }
                }
                break;
            }
            let start = body.len();
            body.resize(start + size, 0);
            conn.read_exact(&mut body[start..])?;
            line.clear();
            conn.read_line(&mut line)?; // the chunk's CRLF
        }
    } else if let Some(n) = length {
        body.resize(n, 0);
        conn.read_exact(&mut body)?;
    } else {
        conn.read_to_end(&mut body)?;
        close = true;
    }
    Ok(Response { status, body, close })
}

/// A TLS client configuration trusting the PEM certificates of `ca_file`.
fn tls_config(ca_file: &Path) -> Result<rustls::ClientConfig> {
    let bad = |what: String| Error::invalid(format!("CA file {}: {what}", ca_file.display()));
    let f = std::fs::File::open(ca_file).map_err(|e| bad(e.to_string()))?;
    let certs = rustls_pemfile::certs(&mut BufReader::new(f)).map_err(|e| bad(e.to_string()))?;
    let mut roots = rustls::RootCertStore::empty();
    let (added, _) = roots.add_parsable_certificates(&certs);
    if added == 0 {
        return Err(bad("holds no PEM certificate".into()));
    }
    Ok(rustls::ClientConfig::builder().with_safe_defaults().with_root_certificates(roots).with_no_client_auth())
}

/// The error of a non-200 response: Connect's JSON body, else the HTTP status.
fn error_of(method: &str, status: u16, body: &[u8]) -> Error {
    let parsed: Option<(String, String)> = serde_json::from_slice::<serde_json::Value>(body).ok().and_then(|v| {
        let code = v.get("code")?.as_str()?.to_owned();
        let message = v.get("message").and_then(|m| m.as_str()).unwrap_or("").to_owned();
        Some((code, message))
    });
    match parsed {
        Some((code, message)) if !code.is_empty() => {
            let message = if message.is_empty() { format!("{method}: {code}") } else { message };
            Error::from_code(&code, message)
        }
        _ => {
            // The Connect protocol's mapping of HTTP status to code, for a body
            // that is not Connect JSON (a proxy in between, a crashed engine).
            let code = match status {
                400 => "internal",
                401 => "unauthenticated",
                403 => "permission_denied",
                404 => "unimplemented",
                429 | 502 | 503 | 504 => "unavailable",
                _ => "unknown",
            };
            let text = String::from_utf8_lossy(&body[..body.len().min(200)]).trim().to_owned();
            let sep = if text.is_empty() { "" } else { ": " };
            Error::from_code(code, format!("{method}: HTTP {status}{sep}{text}"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    /// Serves the given raw responses, one per accepted request, on one connection.
    fn serve(responses: Vec<&'static str>) -> String {
        let ln = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = ln.local_addr().unwrap();
        std::thread::spawn(move || {
            let (s, _) = ln.accept().unwrap();
            let mut r = BufReader::new(s);
            for resp in responses {
                let mut len = 0;
                loop {
                    let mut l = String::new();
                    r.read_line(&mut l).unwrap();
                    if let Some(v) = l.to_ascii_lowercase().strip_prefix("content-length:") {
                        len = v.trim().parse().unwrap();
                    }
                    if l.trim_end().is_empty() {
                        break;
                    }
                }
                let mut body = vec![0; len];
                r.read_exact(&mut body).unwrap();
                r.get_mut().write_all(resp.as_bytes()).unwrap();
            }
        });
        format!("http://{addr}")
    }

    #[test]
    fn reads_content_length_and_chunked_bodies_on_one_connection() {
        // GetStateResponse{state: RUNNING(3)} is 08 03.
        let url = serve(vec![
            "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n\x08\x03",
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\n\x08\r\n1\r\n\x05\r\n0\r\n\r\n",
        ]);
        let c = Client::new(&url, Duration::from_secs(5)).unwrap();
        let r = c.get_state(&pb::GetStateRequest::default()).unwrap();
        assert_eq!(r.state, pb::State::Running as i32);
        let r = c.get_state(&pb::GetStateRequest::default()).unwrap();
        assert_eq!(r.state, pb::State::Error as i32);
    }

    #[test]
    fn connect_errors_keep_code_and_message() {
        let url = serve(vec![
            "HTTP/1.1 400 Bad Request\r\nContent-Length: 54\r\n\r\n{\"code\":\"invalid_argument\",\"message\":\"topology: bad!\"}",
            "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 4\r\n\r\nbusy",
        ]);
        let c = Client::new(&url, Duration::from_secs(5)).unwrap();
        let e = c.get_state(&pb::GetStateRequest::default()).unwrap_err();
        assert_eq!(e, Error::from_code("invalid_argument", "topology: bad!"));
        let e = c.get_state(&pb::GetStateRequest::default()).unwrap_err();
        assert_eq!(e.code(), "unavailable");
        assert_eq!(e.message(), "GetState: HTTP 503: busy");
    }

    #[test]
    fn sends_the_token_as_a_bearer_header() {
        let ln = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", ln.local_addr().unwrap());
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let (s, _) = ln.accept().unwrap();
            let mut r = BufReader::new(s);
            let mut head = String::new();
            loop {
                let mut l = String::new();
                r.read_line(&mut l).unwrap();
                if l.trim_end().is_empty() {
                    break;
                }
                head.push_str(&l);
            }
            r.get_mut().write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n").unwrap();
            tx.send(head).unwrap();
        });
        let c = Client::with_auth(&url, Duration::from_secs(5), Some("s3cret"), None).unwrap();
        c.get_state(&pb::GetStateRequest::default()).unwrap();
        let head = rx.recv().unwrap();
        assert!(head.contains("\r\nAuthorization: Bearer s3cret\r\n"), "{head}");
    }

    #[test]
    fn refuses_urls_it_cannot_speak_to() {
        assert!(Client::new("ftp://x:1", Duration::from_secs(1)).is_err());
        assert!(
            Client::with_auth("https://x:1", Duration::from_secs(1), None, Some(Path::new("/nonexistent"))).is_err()
        );
        let e = Client::with_auth("https://127.0.0.1:1", Duration::from_secs(1), None, None).err().unwrap();
        assert!(e.to_string().contains("https://localhost:1"), "{e}");
        assert!(Client::new("http://", Duration::from_secs(1)).is_err());
        assert_eq!(
            Client::new("http://h:1/p/", Duration::from_secs(1)).unwrap().prefix,
            "/p/polystreams.v1alpha1.EngineService/"
        );
    }
}
