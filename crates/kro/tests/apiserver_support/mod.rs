//! Shared by the `apiserver_*` tests: `kro apiserver --insecure` started as a child process,
//! and a minimal HTTP/1.1 client over a plain socket (so the tests see the exact bytes,
//! headers and codes the server sends).

#![allow(dead_code)] // each test file uses a part

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A free port on loopback (a race with other processes is possible but unlikely).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|address| address.port())
        .expect("a free port")
}

/// `kro apiserver --insecure` on a free port, killed when dropped.
pub struct Server {
    /// The port it listens on.
    pub port: u16,
    /// The child process.
    pub child: Child,
}

impl Server {
    /// Starts the server with extra `args` and waits until `/healthz` answers.
    pub fn start(args: &[&str]) -> Server {
        let port = free_port();
        let child = Command::new(env!("CARGO_BIN_EXE_kro"))
            .args(["apiserver", "--insecure", "--port", &port.to_string()])
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("kro apiserver starts");
        let mut server = Server { port, child };
        server.wait_until_healthy();
        server
    }

    fn wait_until_healthy(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(answer) = try_http(self.port, "GET", "/healthz", "probe", None, &[])
                && answer.code == 200
            {
                return;
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!("kro apiserver exited at start: {status}");
            }
            assert!(Instant::now() < deadline, "the server did not come up");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// A line of `/proc/<pid>/status` in kibibytes (`VmHWM`, `VmRSS`), where there is one.
    pub fn status_kib(&self, field: &str) -> Option<u64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid())).ok()?;
        let line = status
            .lines()
            .find(|line| line.starts_with(&format!("{field}:")))?;
        line.split_whitespace().nth(1)?.parse().ok()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An HTTP answer.
#[derive(Debug)]
pub struct Answer {
    /// The status code.
    pub code: u16,
    /// Header names (lowercase) and values.
    pub headers: Vec<(String, String)>,
    /// The body as text.
    pub body: String,
}

impl Answer {
    /// The first value of a header.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.as_str())
    }

    /// The body as JSON.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body)
            .unwrap_or_else(|error| panic!("not JSON ({error}): {}", self.body))
    }
}

/// One request with a JSON body (when given); panics when the server does not answer.
pub fn http(port: u16, method: &str, path: &str, agent: &str, body: Option<&str>) -> Answer {
    let content_type = [("Content-Type", "application/json")];
    let headers: &[(&str, &str)] = if body.is_some() { &content_type } else { &[] };
    try_http(port, method, path, agent, body.map(str::as_bytes), headers)
        .unwrap_or_else(|| panic!("no answer to {method} {path}"))
}

/// One request with any body and headers; `None` when the connection fails.
pub fn try_http(
    port: u16,
    method: &str,
    path: &str,
    agent: &str,
    body: Option<&[u8]>,
    headers: &[(&str, &str)],
) -> Option<Answer> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).ok()?;
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .ok()?;
    let body = body.unwrap_or_default();
    let mut request = format!(
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUser-Agent: {agent}\r\n\
         Connection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    stream.write_all(request.as_bytes()).ok()?;
    // The server may answer (413) before it has read a large body.
    let _ = stream.write_all(body);
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).ok()?;
    parse(&raw)
}

fn parse(raw: &[u8]) -> Option<Answer> {
    let split = raw.windows(4).position(|window| window == b"\r\n\r\n")?;
    let head = String::from_utf8_lossy(&raw[..split]);
    let mut lines = head.lines();
    let code = lines.next()?.split_whitespace().nth(1)?.parse().ok()?;
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.trim().to_lowercase(), value.trim().to_owned()))
        .collect();
    let rest = &raw[split + 4..];
    let chunked = headers
        .iter()
        .any(|(name, value)| name == "transfer-encoding" && value.contains("chunked"));
    let body = if chunked {
        dechunk(rest)
    } else {
        rest.to_vec()
    };
    Some(Answer {
        code,
        headers,
        body: String::from_utf8_lossy(&body).into_owned(),
    })
}

fn dechunk(mut rest: &[u8]) -> Vec<u8> {
    let mut body = Vec::new();
    while let Some(end) = rest.windows(2).position(|window| window == b"\r\n") {
        let size =
            usize::from_str_radix(String::from_utf8_lossy(&rest[..end]).trim(), 16).unwrap_or(0);
        if size == 0 {
            break;
        }
        let start = end + 2;
        let stop = (start + size).min(rest.len());
        body.extend_from_slice(&rest[start..stop]);
        rest = &rest[(stop + 2).min(rest.len())..];
    }
    body
}
