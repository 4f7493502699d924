"""Async host functions: the event loop the bundle executor awaits them on.

A user function may be ``async def`` (or return an awaitable: a coroutine,
a task, a future). The executor calls the function for every element of a
step first, in record order, then awaits the awaitables it got back
*together* on this module's loop, so that an I/O-bound ``map_values``
overlaps its requests within a bundle. Results are put back in record
order; an awaitable that raises fails its own record.

The loop is the SDK's own: one per host session thread (an Executor, made by
``App.run()`` or the test driver, owns one), created when a bundle first
needs it and closed with the executor. It runs in the session thread itself
(``run_until_complete``), so an awaited function runs on the thread that
serves the bundles, as a synchronous one does. When that thread already
runs an event loop (``app.run()`` called from inside a coroutine), the
loop cannot be run there, and runs in a thread of its own instead; the
session thread then waits for it.

A wait is bounded: the engine hands the bundles of a worker silent for its
host timeout (30 s) to another worker, so an awaitable that has not finished
within ``timeout`` seconds of its bundle's first wait is cancelled and fails
its record with a ``TimeoutError`` that names the function, its token and
node.
"""

from __future__ import annotations

import asyncio
import inspect
import threading
import time
from collections.abc import Awaitable, Callable, Coroutine
from functools import partial
from typing import Any, TypeVar

__all__ = ["Loop", "is_async", "is_awaitable", "function_name"]

T = TypeVar("T")

# How long cancelled awaitables get to finish (their finally blocks) after
# their bound passed.
_CANCEL_GRACE_S = 1.0


def is_async(fn: Callable[..., Any]) -> bool:
    """Whether calling fn gives an awaitable by its type: an ``async def``
    (or async generator function), through ``functools.partial``, or an
    object whose ``__call__`` is one."""
    while isinstance(fn, partial):
        fn = fn.func
    if inspect.iscoroutinefunction(fn) or inspect.isasyncgenfunction(fn):
        return True
    call = getattr(type(fn), "__call__", None)
    return not inspect.isfunction(fn) and not inspect.ismethod(fn) and (
        inspect.iscoroutinefunction(call) or inspect.isasyncgenfunction(call)
    )


def is_awaitable(x: Any) -> bool:
    """inspect.isawaitable, answering the common case (a coroutine) first."""
    return type(x) is _COROUTINE or inspect.isawaitable(x)


async def _probe() -> None:
    pass


_c = _probe()
_COROUTINE = type(_c)
_c.close()


def function_name(fn: Callable[..., Any]) -> str:
    """The name a message gives a user function (its qualified name)."""
    while isinstance(fn, partial):
        fn = fn.func
    return getattr(fn, "__qualname__", None) or type(fn).__qualname__


class Failed:
    """The outcome of an awaitable that raised (or was cancelled, or timed out)."""

    __slots__ = ("message",)

    def __init__(self, message: str) -> None:
        self.message = message


def _text(e: BaseException) -> str:
    return f"{type(e).__name__}: {e}"


class Loop:
    """The SDK's event loop of one host session thread. Not safe for
    concurrent use: one thread (the session's) calls it."""

    def __init__(self, timeout: float) -> None:
        self.timeout = timeout
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None  # runs _loop when the caller's thread runs a loop of its own
        self._deadline: float | None = None

    def start_bundle(self) -> None:
        """Starts the bound of a new bundle: its waits together take at
        most ``timeout`` seconds from the first one."""
        self._deadline = None

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Runs coro to completion on the loop and returns its result."""
        loop = self._loop
        if loop is None:
            loop = self._loop = asyncio.new_event_loop()
        if self._thread is None:
            try:
                asyncio.get_running_loop()
            except RuntimeError:
                return loop.run_until_complete(coro)
            # This thread runs a loop (app.run() from a coroutine): ours
            # runs in a thread of its own from now on.
            self._thread = threading.Thread(target=loop.run_forever, name="polystreams-async-functions", daemon=True)
            self._thread.start()
        return asyncio.run_coroutine_threadsafe(coro, loop).result()

    def gather(self, awaitables: list[Awaitable[Any]], what: Callable[[], str]) -> list[Any]:
        """Awaits awaitables together; returns their results in order, a
        Failed for each that raised, was cancelled or passed the bundle's
        bound (``what()`` names the function in that message)."""
        now = time.monotonic()
        if self._deadline is None:
            self._deadline = now + self.timeout
        return self.run(self._gather(awaitables, max(self._deadline - now, 0.0), what))

    async def _gather(self, awaitables: list[Awaitable[Any]], timeout: float, what: Callable[[], str]) -> list[Any]:
        tasks: list[asyncio.Future[Any] | Failed] = []
        for a in awaitables:
            try:
                tasks.append(asyncio.ensure_future(a))
            except Exception as e:  # not an awaitable after all (e.g. a closed coroutine)
                tasks.append(Failed(_text(e)))
        live = [t for t in tasks if not isinstance(t, Failed)]
        pending: set[asyncio.Future[Any]] = set()
        if live:
            _, pending = await asyncio.wait(live, timeout=timeout)
        if pending:
            for p in pending:
                p.cancel()
            await asyncio.wait(pending, timeout=_CANCEL_GRACE_S)
        out: list[Any] = []
        for t in tasks:
            if isinstance(t, Failed):
                out.append(t)
            elif t in pending:
                out.append(Failed(f"TimeoutError: {what()} did not finish within {self.timeout:g} s (cancelled)"))
            elif t.cancelled():
                out.append(Failed("CancelledError: the awaitable was cancelled"))
            else:
                raised = t.exception()
                out.append(t.result() if raised is None else Failed(_text(raised)))
        return out

    def close(self) -> None:
        """Cancels what still runs on the loop, then closes it."""
        loop, self._loop = self._loop, None
        if loop is None:
            return
        if self._thread is not None:
            # The loop runs in its own thread (this one may run another loop).
            try:
                asyncio.run_coroutine_threadsafe(_shutdown(loop), loop).result(_CANCEL_GRACE_S + 5)
            except Exception:
                pass  # closed regardless
            loop.call_soon_threadsafe(loop.stop)
            self._thread.join(5)
            self._thread = None
        else:
            loop.run_until_complete(_shutdown(loop))
        if not loop.is_running():
            loop.close()


async def _shutdown(loop: asyncio.AbstractEventLoop) -> None:
    """Cancels the loop's other tasks (giving them a moment to finish) and
    closes its async generators."""
    tasks = [t for t in asyncio.all_tasks(loop) if t is not asyncio.current_task()]
    for t in tasks:
        t.cancel()
    if tasks:
        await asyncio.wait(tasks, timeout=_CANCEL_GRACE_S)
    await loop.shutdown_asyncgens()
