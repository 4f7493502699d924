"""Peak RSS of an engine refusing large request bodies (docs/security.md, "Request size").

    python3 tools/bench/request_body_rss.py bin/polystreams sized|chunked [--clients 8] [--mib 100]

Starts `polystreams serve` on a free loopback port (its brokers are never contacted), sends
--clients concurrent OpenSession requests of --mib MiB each, with a Content-Length ("sized") or
chunked, and prints the engine's VmRSS and VmHWM before and after, and what each client saw
(429 when the engine answered, a broken pipe or reset when it closed the connection first).
"""

import argparse
import http.client
import re
import subprocess
import tempfile
import threading


def status(pid: int) -> dict[str, str]:
    with open(f"/proc/{pid}/status") as f:
        return {k: v.strip() for k, v in (line.split(":", 1) for line in f)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("engine")
    ap.add_argument("mode", choices=["sized", "chunked"])
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--mib", type=int, default=100)
    args = ap.parse_args()
    state = tempfile.mkdtemp()
    p = subprocess.Popen(
        [args.engine, "serve", "--listen", "127.0.0.1:0", "--brokers", "127.0.0.1:1", "--state-dir", state],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )
    port = 0
    assert p.stdout is not None
    for line in p.stdout:
        m = re.search(r"engine http://127\.0\.0\.1:(\d+)", line)
        if m:
            port = int(m.group(1))
            break
    before = status(p.pid)
    size, chunk = args.mib << 20, b"\0" * (1 << 20)
    seen: list[str] = []

    def send() -> None:
        c = http.client.HTTPConnection("127.0.0.1", port)
        try:
            c.putrequest("POST", "/polystreams.v1alpha1.EngineService/OpenSession")
            c.putheader("Content-Type", "application/proto")
            if args.mode == "chunked":
                c.putheader("Transfer-Encoding", "chunked")
                c.endheaders()
                for _ in range(size // len(chunk)):
                    c.send(b"%x\r\n" % len(chunk) + chunk + b"\r\n")
                c.send(b"0\r\n\r\n")
            else:
                c.putheader("Content-Length", str(size))
                c.endheaders()
                for _ in range(size // len(chunk)):
                    c.send(chunk)
            seen.append(str(c.getresponse().status))
        except OSError as e:
            seen.append(type(e).__name__)

    threads = [threading.Thread(target=send) for _ in range(args.clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    after = status(p.pid)
    p.terminate()
    p.wait()
    print(f"{args.clients} x {args.mib} MiB {args.mode}: {sorted(set(seen))}")
    print(f"VmRSS {before['VmRSS']} -> {after['VmRSS']}, VmHWM {after['VmHWM']}")


if __name__ == "__main__":
    main()
