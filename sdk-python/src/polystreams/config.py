"""Application configuration, named as Kafka Streams names it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

__all__ = ["Config", "OffsetReset", "ProcessingGuarantee", "ProductionExceptionHandler", "is_secret", "redact"]

ProcessingGuarantee = Literal["at_least_once", "exactly_once_v2"]
"""Kafka Streams' ``processing.guarantee``."""

OffsetReset = Literal["earliest", "latest", "none"]
"""Kafka Streams' ``auto.offset.reset`` (and ``Consumed.withOffsetResetPolicy``)."""

ProductionExceptionHandler = Literal["fail", "continue"]
"""Kafka Streams' ``default.production.exception.handler``."""


def is_secret(key: str) -> bool:
    """Whether a configuration key holds a credential, whose value is never
    printed (the engine applies the same rule)."""
    k = key.lower()
    return "password" in k or "secret" in k or "jaas" in k or "token" in k or k.endswith(".key")


def redact(config: Mapping[str, str]) -> dict[str, str]:
    """config with credential values replaced by ``[hidden]``."""
    return {k: "[hidden]" if is_secret(k) else v for k, v in config.items()}


@dataclass(frozen=True, repr=False)
class Config:
    """Kafka Streams configuration for an App.

    The common settings are fields; anything else goes in ``extra`` under
    its Kafka Streams (or ``polystreams.*``) name, e.g.
    ``Config(extra={"sasl.mechanism": "PLAIN", "sasl.username": "u",
    "sasl.password": "p", "polystreams.bundle.max.records": "5000"})``.
    None leaves a setting at the engine's documented default
    (``processing.guarantee`` at_least_once; ``commit.interval.ms`` 30000, or
    100 under exactly_once_v2; ``statestore.cache.max.bytes`` 10 MiB: tables
    forward the latest update per key at each commit, 0 forwards every update
    at once; ``num.standby.replicas`` 0: warm copies of each task's stores
    kept on that many other instances, docs/scale-out.md;
    ``max.task.idle.ms`` 0: a task reading several partitions, a join's or a
    merge's, waits for the records already on the broker of each before it
    picks the next record by timestamp, -1 never waits, a positive value also
    waits that long for new ones, docs/design/joins.md;
    ``auto_offset_reset`` earliest: where a source partition with no
    committed offset starts, latest, or none to fail naming the partition;
    ``default_key_serde`` / ``default_value_serde`` bytes: the serdes of a
    source that names none; ``default_production_exception_handler`` fail:
    a record the broker refuses for good, e.g. too large, fails the
    application, ``continue`` logs, counts and skips it;
    ``num_stream_threads`` unbounded: how many tasks process a batch at
    once). Credential values never appear in repr().

    What a failed record does is set in ``extra`` too, by Kafka Streams'
    names: ``default.deserialization.exception.handler`` and
    ``processing.exception.handler`` (``fail``, ``log_and_continue`` or
    ``dead_letter``) and ``errors.deadletterqueue.topic.name``; see
    docs/errors.md.
    """

    processing_guarantee: ProcessingGuarantee | None = None
    commit_interval_ms: int | None = None
    statestore_cache_max_bytes: int | None = None
    state_dir: str | None = None
    extra: Mapping[str, str] = field(default_factory=dict)
    num_standby_replicas: int | None = None
    max_task_idle_ms: int | None = None
    auto_offset_reset: OffsetReset | None = None
    default_key_serde: str | None = None
    default_value_serde: str | None = None
    default_production_exception_handler: ProductionExceptionHandler | None = None
    num_stream_threads: int | None = None

    def properties(self) -> dict[str, str]:
        """The configuration as the engine takes it: Kafka Streams' dotted names."""
        out = {str(k): str(v) for k, v in self.extra.items()}
        if self.processing_guarantee is not None:
            out["processing.guarantee"] = self.processing_guarantee
        if self.commit_interval_ms is not None:
            out["commit.interval.ms"] = str(self.commit_interval_ms)
        if self.statestore_cache_max_bytes is not None:
            out["statestore.cache.max.bytes"] = str(self.statestore_cache_max_bytes)
        if self.num_standby_replicas is not None:
            out["num.standby.replicas"] = str(self.num_standby_replicas)
        if self.max_task_idle_ms is not None:
            out["max.task.idle.ms"] = str(self.max_task_idle_ms)
        if self.state_dir is not None:
            out["state.dir"] = self.state_dir
        if self.auto_offset_reset is not None:
            out["auto.offset.reset"] = self.auto_offset_reset
        if self.default_key_serde is not None:
            out["default.key.serde"] = self.default_key_serde
        if self.default_value_serde is not None:
            out["default.value.serde"] = self.default_value_serde
        if self.default_production_exception_handler is not None:
            out["default.production.exception.handler"] = self.default_production_exception_handler
        if self.num_stream_threads is not None:
            out["num.stream.threads"] = str(self.num_stream_threads)
        return out

    def __repr__(self) -> str:
        parts = [
            f"{name}={getattr(self, name)!r}"
            for name in (
                "processing_guarantee",
                "commit_interval_ms",
                "statestore_cache_max_bytes",
                "num_standby_replicas",
                "max_task_idle_ms",
                "state_dir",
                "auto_offset_reset",
                "default_key_serde",
                "default_value_serde",
                "default_production_exception_handler",
                "num_stream_threads",
            )
            if getattr(self, name) is not None
        ]
        if self.extra:
            parts.append(f"extra={redact(self.extra)!r}")
        return f"Config({', '.join(parts)})"
