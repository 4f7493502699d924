//! A Connect-protocol unary client for EngineService, on reqwest's blocking
//! client (hyper underneath: HTTP/1.1 keep-alive pooling, chunked bodies,
//! retry of a request that met a connection the engine had just closed).
//!
//! Every call is a POST of a binary protobuf body to
//! `/polystreams.v1alpha1.EngineService/<Method>` with `Content-Type:
//! application/proto` and `Connect-Protocol-Version: 1`. Errors come back as
//! non-200 responses with a JSON body `{"code": ..., "message": ...}` and
//! become the matching [`Error`]. Every RPC of the protocol is unary, so
//! nothing here needs HTTP/2. An `https://` engine is spoken to over TLS
//! (rustls), verified against a CA file by host name or IP address; a token
//! goes in `Authorization: Bearer <token>` on every call.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use prost::Message;
use reqwest::header::{HeaderMap, HeaderValue, AUTHORIZATION, CONTENT_TYPE};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::CertificateDer;

use crate::errors::{Error, Result};
use crate::pb;

const SERVICE: &str = "/polystreams.v1alpha1.EngineService/";
const USER_AGENT: &str = concat!("polystreams-rust/", env!("CARGO_PKG_VERSION"));

/// The system's CA bundle (Debian's), trusted when no CA file is given.
const SYSTEM_CAS: &str = "/etc/ssl/certs/ca-certificates.crt";

/// One engine's client. Safe for concurrent use: reqwest keeps a pool of
/// keep-alive connections, so an interactive query does not wait behind a
/// long-polling Exchange. `timeout` bounds each call, from sending the
/// request to reading the whole response.
pub(crate) struct Client {
    url: String,
    // The URL of EngineService's methods: scheme, authority, path prefix, SERVICE.
    prefix: String,
    timeout: Duration,
    // Content-Type, Connect-Protocol-Version and, with a token, Authorization
    // (marked sensitive: never in a Debug output or an error).
    headers: HeaderMap,
    tls: Arc<rustls::ClientConfig>,
    // The HTTP client; taken (its connections and its runtime thread ended)
    // by close, built again by a call after it.
    http: Mutex<Option<reqwest::blocking::Client>>,
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
        let prefix = format!("{}://{addr}{path}{SERVICE}", if https { "https" } else { "http" });
        reqwest::Url::parse(&prefix).map_err(|e| Error::invalid(format!("engine URL {url:?}: {e}")))?;
        // reqwest is built without a TLS provider of its own: an http:// engine
        // gets a configuration trusting nothing, which no connection uses.
        let roots =
            if https { ca_roots(ca_file.unwrap_or(Path::new(SYSTEM_CAS)))? } else { rustls::RootCertStore::empty() };
        let tls = Arc::new(tls_config(roots)?);
        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/proto"));
        headers.insert("connect-protocol-version", HeaderValue::from_static("1"));
        if let Some(t) = token.filter(|t| !t.is_empty()) {
            let mut v = HeaderValue::from_str(&format!("Bearer {t}"))
                .map_err(|_| Error::invalid("token: holds a character an HTTP header cannot carry"))?;
            v.set_sensitive(true);
            headers.insert(AUTHORIZATION, v);
        }
        let client =
            Client { url: url.trim_end_matches('/').to_owned(), prefix, timeout, headers, tls, http: Mutex::new(None) };
        client.http()?;
        Ok(client)
    }

    pub(crate) fn url(&self) -> &str {
        &self.url
    }

    /// Closes the idle connections (a later call opens new ones).
    pub(crate) fn close(&self) {
        let http = self.http.lock().unwrap_or_else(|e| e.into_inner()).take();
        drop(http);
    }

    /// The HTTP client, built on first use and after close.
    fn http(&self) -> Result<reqwest::blocking::Client> {
        let mut http = self.http.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(c) = http.as_ref() {
            return Ok(c.clone());
        }
        let b = reqwest::blocking::Client::builder()
            .user_agent(USER_AGENT)
            .default_headers(self.headers.clone())
            .timeout(self.timeout)
            .connect_timeout(self.timeout)
            .tcp_nodelay(true)
            .http1_only()
            // The engine is addressed directly, never through HTTP_PROXY, and
            // a Connect server does not redirect.
            .no_proxy()
            .redirect(reqwest::redirect::Policy::none())
            .tls_backend_preconfigured(rustls::ClientConfig::clone(&self.tls));
        let c =
            b.build().map_err(|e| Error::internal(format!("engine at {}: HTTP client: {}", self.url, chain(&e))))?;
        *http = Some(c.clone());
        Ok(c)
    }

    /// Calls EngineService/<method>.
    pub(crate) fn call<Req: Message, Resp: Message + Default>(&self, method: &str, req: &Req) -> Result<Resp> {
        let http = self.http()?;
        let resp = http
            .post(format!("{}{method}", self.prefix))
            .body(req.encode_to_vec())
            .send()
            .map_err(|e| self.unreachable(method, &e))?;
        let status = resp.status().as_u16();
        let body = resp.bytes().map_err(|e| self.unreachable(method, &e))?;
        if status != 200 {
            return Err(error_of(method, status, &body));
        }
        Resp::decode(body).map_err(|e| Error::internal(format!("{method}: the engine's response does not parse: {e}")))
    }

    fn unreachable(&self, method: &str, e: &reqwest::Error) -> Error {
        let what = if e.is_timeout() { format!("did not answer within {:?}", self.timeout) } else { chain(e) };
        Error::from_code("unavailable", format!("{method}: engine at {} is unreachable: {what}", self.url))
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
    pub(crate) fn pause_processing(&self, r: &pb::PauseProcessingRequest) -> Result<pb::PauseProcessingResponse> {
        self.call("PauseProcessing", r)
    }
    pub(crate) fn resume_processing(&self, r: &pb::ResumeProcessingRequest) -> Result<pb::ResumeProcessingResponse> {
        self.call("ResumeProcessing", r)
    }
    pub(crate) fn clean_up_state(&self, r: &pb::CleanUpStateRequest) -> Result<pb::CleanUpStateResponse> {
        self.call("CleanUpState", r)
    }
    pub(crate) fn read(&self, r: &pb::ReadRequest) -> Result<pb::ReadResponse> {
        self.call("Read", r)
    }
    pub(crate) fn query(&self, r: &pb::QueryRequest) -> Result<pb::QueryResponse> {
        self.call("Query", r)
    }
    pub(crate) fn query_metadata_for_key(
        &self,
        r: &pb::QueryMetadataForKeyRequest,
    ) -> Result<pb::QueryMetadataForKeyResponse> {
        self.call("QueryMetadataForKey", r)
    }
    pub(crate) fn streams_metadata(&self, r: &pb::StreamsMetadataRequest) -> Result<pb::StreamsMetadataResponse> {
        self.call("StreamsMetadata", r)
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

/// An error and its causes, "outer: inner: ...", without reqwest's "for url
/// (...)" (the caller names the engine) and without repeats.
fn chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut cur = Some(e);
    while let Some(err) = cur {
        let text = err.to_string();
        let text = match text.find(" for url (") {
            Some(i) => text[..i].to_owned(),
            None => text,
        };
        if !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
        cur = err.source();
    }
    parts.join(": ")
}

/// The PEM certificates of `ca_file`, as trust anchors.
fn ca_roots(ca_file: &Path) -> Result<rustls::RootCertStore> {
    let bad = |what: String| Error::invalid(format!("CA file {}: {what}", ca_file.display()));
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(ca_file)
        .map_err(|e| bad(e.to_string()))?
        .collect::<std::result::Result<_, _>>()
        .map_err(|e| bad(e.to_string()))?;
    let mut roots = rustls::RootCertStore::empty();
    let (added, _) = roots.add_parsable_certificates(certs);
    if added == 0 {
        return Err(bad("holds no PEM certificate".into()));
    }
    Ok(roots)
}

/// A TLS client configuration (rustls with ring) trusting `roots`; rustls
/// verifies the engine's certificate by the URL's host name or IP address.
fn tls_config(roots: rustls::RootCertStore) -> Result<rustls::ClientConfig> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| Error::internal(format!("TLS: {e}")))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(config)
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
    use std::io::{BufRead, BufReader, Read, Write};
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
        let header = |name: &str| {
            head.lines()
                .filter_map(|l| l.split_once(':'))
                .find(|(n, _)| n.eq_ignore_ascii_case(name))
                .map(|(_, v)| v.trim().to_owned())
        };
        assert!(head.starts_with("POST /polystreams.v1alpha1.EngineService/GetState HTTP/1.1\r\n"), "{head}");
        assert_eq!(header("authorization").as_deref(), Some("Bearer s3cret"), "{head}");
        assert_eq!(header("content-type").as_deref(), Some("application/proto"), "{head}");
        assert_eq!(header("connect-protocol-version").as_deref(), Some("1"), "{head}");
    }

    #[test]
    fn refuses_urls_it_cannot_speak_to() {
        assert!(Client::new("ftp://x:1", Duration::from_secs(1)).is_err());
        assert!(
            Client::with_auth("https://x:1", Duration::from_secs(1), None, Some(Path::new("/nonexistent"))).is_err()
        );
        assert!(Client::new("http://", Duration::from_secs(1)).is_err());
        assert!(Client::new("http://h:x", Duration::from_secs(1)).is_err());
        assert_eq!(
            Client::new("http://h:1/p/", Duration::from_secs(1)).unwrap().prefix,
            "http://h:1/p/polystreams.v1alpha1.EngineService/"
        );
    }

    #[test]
    fn an_unreachable_engine_is_unavailable_naming_it() {
        let ln = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", ln.local_addr().unwrap());
        drop(ln);
        let c = Client::new(&url, Duration::from_secs(5)).unwrap();
        let e = c.get_state(&pb::GetStateRequest::default()).unwrap_err();
        assert_eq!(e.code(), "unavailable", "{e}");
        assert!(e.message().starts_with(&format!("GetState: engine at {url} is unreachable: ")), "{e}");
        assert!(!e.message().contains("for url"), "{e}");
    }
}
