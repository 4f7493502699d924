"""Finding and spawning the engine binary.

An App with no engine URL runs its own engine as a child process:
``polystreams dev`` (with an embedded Kafka broker) when no brokers are
given, else ``polystreams serve --brokers ...``. The child binds free
loopback ports and prints where it serves; it exits when its standard input
closes (so it never outlives this process) and, on Linux, when this process
dies (PR_SET_PDEATHSIG).
"""

from __future__ import annotations

import collections
import ctypes
import logging
import os
import queue
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO, Callable

from polystreams.errors import EngineStartError, FailedPreconditionError

__all__ = ["find_engine", "check_engine_version", "EngineProcess", "feed_hint"]

log = logging.getLogger("polystreams.engine")

_BROKER_LINE = "polystreams: broker "
_ENGINE_LINE = "polystreams: engine "
_LEVEL = re.compile(r"\blevel=(DEBUG|INFO|WARN|ERROR)\b")
_LEVELS = {"DEBUG": logging.DEBUG, "INFO": logging.INFO, "WARN": logging.WARNING, "ERROR": logging.ERROR}


def find_engine() -> str:
    """The engine binary: $POLYSTREAMS_ENGINE, else the one bundled in this
    package (``polystreams/_bin/polystreams``, present in the platform wheels
    that ``make dist`` builds, of this package's own version), else
    ``polystreams`` on PATH, else ``bin/polystreams`` in a directory above this
    package (a checkout of the repository, after ``make build``)."""
    env = os.environ.get("POLYSTREAMS_ENGINE")
    if env:
        if not os.access(env, os.X_OK):
            raise EngineStartError("unavailable", f"POLYSTREAMS_ENGINE={env} is not an executable file")
        return env
    bundled = Path(__file__).resolve().parent / "_bin" / "polystreams"
    if bundled.is_file() and os.access(bundled, os.X_OK):
        return str(bundled)
    found = shutil.which("polystreams")
    if found:
        return found
    for d in Path(__file__).resolve().parents:
        candidate = d / "bin" / "polystreams"
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    raise EngineStartError(
        "unavailable",
        "the polystreams engine binary was not found: set POLYSTREAMS_ENGINE to its path, put `polystreams` on "
        "PATH, give App(engine='http://host:port') of a running engine, or build it in the repository with `make build`",
    )


def feed_hint(broker: str, topics: list[str], commit_interval_ms: str) -> str:
    """The line an App that spawned ``polystreams dev`` prints when it
    starts: where the embedded broker is, and a way to feed it records (kcat,
    one record per line of input)."""
    topic = topics[0] if topics else "<topic>"
    return (
        f"polystreams: embedded Kafka broker at {broker} (app.brokers; missing topics are created, results "
        f"commit every {commit_interval_ms} ms); feed it: printf 'to be or not to be\\n' | kcat -P -b {broker} -t {topic}"
    )


def _compat(version: str) -> tuple[int, ...] | None:
    """The part of a version that must match: the major version, and the
    minor too before 1.0. None when it does not parse."""
    m = re.match(r"(\d+)\.(\d+)", version)
    if m is None:
        return None
    major, minor = int(m.group(1)), int(m.group(2))
    return (major,) if major > 0 else (major, minor)


def check_engine_version(engine: str, sdk: str) -> None:
    """Raises FailedPreconditionError naming both versions when the engine's
    (OpenSessionResponse.version) is incompatible with this SDK's. Engine and
    SDKs share one version; they are compatible when their major versions
    (and, before 1.0, their minor versions) are equal. An engine that reports
    none (older than the field) or ``dev`` (an unstamped build) is accepted."""
    if engine in ("", "dev") or _compat(engine) == _compat(sdk):
        return
    same = "major" if (_compat(sdk) or (0,))[0] > 0 else "major and minor"
    raise FailedPreconditionError(
        "failed_precondition",
        f"engine version {engine} is incompatible with this SDK's version {sdk}: engine, protocol and SDKs share "
        f"one version, and an SDK needs an engine of the same {same} version (the one bundled in the package is)",
    )


def _pdeathsig() -> Callable[[], None] | None:
    """A preexec_fn that asks Linux to SIGTERM the child when its parent
    thread dies. PR_SET_PDEATHSIG fires when the *thread* that forked exits,
    so it is only used when spawning from the main thread; otherwise the
    closing of the child's stdin does the job."""
    if not sys.platform.startswith("linux") or threading.current_thread() is not threading.main_thread():
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        prctl = libc.prctl
    except (OSError, AttributeError):
        return None
    parent = os.getpid()
    pr_set_pdeathsig = 1

    def preexec() -> None:
        prctl(pr_set_pdeathsig, int(signal.SIGTERM), 0, 0, 0)
        if os.getppid() != parent:  # the parent died before prctl took effect
            os._exit(1)

    return preexec


class EngineProcess:
    """An engine child process. ``url`` is where it serves the protocol,
    ``broker`` the embedded broker's address (``dev`` only, else None)."""

    url: str
    broker: str | None

    def __init__(self, binary: str, brokers: str | None = None, *, start_timeout: float = 30.0) -> None:
        argv = [binary]
        if brokers:
            argv += ["serve", "--brokers", brokers]
        else:
            argv += ["dev", "--broker", "127.0.0.1:0"]
        argv += ["--listen", "127.0.0.1:0", "--exit-on-stdin-close"]
        self.argv = argv
        self.broker = None
        self._stderr_tail: collections.deque[str] = collections.deque(maxlen=40)
        self._serving = threading.Event()  # the engine has reported its address
        try:
            self._proc = subprocess.Popen(
                argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                encoding="utf-8",
                errors="replace",
                preexec_fn=_pdeathsig(),
                close_fds=True,
                # Its own session, so its own process group: a Ctrl-C at the
                # terminal reaches this program, which stops the app cleanly,
                # and not the engine mid-commit (which would leave Stop an
                # "engine unreachable" error). As the Node and Rust SDKs do.
                start_new_session=True,
            )
        except OSError as e:
            raise EngineStartError("unavailable", f"cannot start the engine {binary}: {e}") from None
        assert self._proc.stdout is not None and self._proc.stderr is not None
        lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read_stdout, args=(self._proc.stdout, lines), name="polystreams-engine-stdout", daemon=True).start()
        self._stderr_done = threading.Thread(target=self._read_stderr, args=(self._proc.stderr,), name="polystreams-engine-stderr", daemon=True)
        self._stderr_done.start()

        deadline = time.monotonic() + start_timeout
        url = None
        while url is None:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                self.close(timeout=5)
                raise EngineStartError("unavailable", f"{self._cmd()} did not report its address within {start_timeout:g}s{self._tail()}")
            try:
                line = lines.get(timeout=remaining)
            except queue.Empty:
                continue
            if line is None:  # stdout closed: the engine exited
                code = self._proc.wait()
                self._stderr_done.join(timeout=2)
                raise EngineStartError("unavailable", f"{self._cmd()} exited with status {code} before serving{self._tail()}")
            if line.startswith(_BROKER_LINE):
                self.broker = line[len(_BROKER_LINE):].strip()
            elif line.startswith(_ENGINE_LINE):
                url = line[len(_ENGINE_LINE):].strip()
        self.url = url
        self.pid = self._proc.pid
        log.debug("engine %s serving at %s (broker %s)", self.pid, self.url, self.broker)

    def _cmd(self) -> str:
        return "engine `" + " ".join(self.argv) + "`"

    def _tail(self) -> str:
        tail = "\n".join(self._stderr_tail)
        return f"; its last output:\n{tail}" if tail else ""

    def _read_stdout(self, f: IO[str], lines: queue.Queue[str | None]) -> None:
        for line in f:
            if self._serving.is_set():
                log.info("%s", line.rstrip("\n"))  # after the address lines the engine prints little
                continue
            lines.put(line)
            if line.startswith(_ENGINE_LINE):
                self._serving.set()
        lines.put(None)

    def _read_stderr(self, f: IO[str]) -> None:
        # Drained always (a full pipe would block the engine); kept as a tail
        # for start errors and forwarded to the "polystreams.engine" logger.
        for line in f:
            line = line.rstrip("\n")
            if not line:
                continue
            self._stderr_tail.append(line)
            m = _LEVEL.search(line)
            log.log(_LEVELS[m.group(1)] if m else logging.WARNING, "%s", line)

    def alive(self) -> bool:
        return self._proc.poll() is None

    def close(self, timeout: float = 15.0) -> None:
        """Stops the engine: closes its stdin, SIGTERM, waits, then SIGKILL."""
        proc = self._proc
        if proc.poll() is None:
            try:
                if proc.stdin is not None:
                    proc.stdin.close()
            except OSError:
                pass
            try:
                proc.terminate()
                proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                log.warning("engine %s did not stop within %gs; killing it", proc.pid, timeout)
                proc.kill()
                proc.wait()
        elif proc.stdin is not None:
            try:
                proc.stdin.close()
            except OSError:
                pass
