"""Restoring state from the changelog, as the SDK sees it, against the real engine."""

from __future__ import annotations

import shutil
import struct
from pathlib import Path

from test_engine_e2e import Runner, config, create_topic, produce, read_until, word_count

from polystreams import App, RestoreProgress


def test_state_listener_sees_restoring_after_the_state_dir_is_wiped(tmp_path: Path, app_id: str) -> None:
    # 4,000 distinct words over 1,000 lines: the changelog gets a record per word.
    lines = [" ".join(f"k{i * 4 + j:05d}" for j in range(4)) for i in range(1000)]
    words = {w for line in lines for w in line.split()}
    # The broker lives in the first engine (polystreams dev); the application
    # runs on engines spawned against it, so that it outlives them.
    with App(app_id + "-broker", config(tmp_path / "broker")) as holder:
        assert holder.brokers
        brokers = holder.brokers
        create_topic(brokers, "lines", 4)
        create_topic(brokers, "word-counts", 4)
        produce(brokers, "lines", lines)

        def complete(last: dict[str, bytes]) -> bool:
            return len(last) == len(words) and all(struct.unpack(">q", v)[0] == 1 for v in last.values())

        cfg = config(tmp_path)
        with App(app_id, cfg, brokers=brokers) as app:
            word_count(app)
            runner = Runner(app)
            assert complete(read_until(brokers, "word-counts", complete, 90, runner))
            app.stop()
            runner.join(60)
            assert runner.error is None

        shutil.rmtree(tmp_path / "state" / app_id)
        transitions: list[tuple[str, str]] = []
        progress: list[RestoreProgress] = []
        with App(app_id, cfg, brokers=brokers) as app:
            word_count(app)
            assert app.restore_progress() == RestoreProgress()  # before start: nothing

            @app.on_state_change
            def on_change(new: str, old: str) -> None:
                transitions.append((new, old))
                if new == "running":
                    progress.append(app.restore_progress())
                    app.stop()

            runner = Runner(app)
            runner.join(90)
            assert runner.error is None
            assert ("restoring", "rebalancing") in transitions, transitions
            states = [new for new, _ in transitions]
            assert states.index("restoring") < states.index("running"), transitions
            assert transitions[-1] == ("stopped", "running"), transitions
            # Once running, every store partition is restored: the whole
            # changelog (one record per word) was read.
            (p,) = progress
            assert p.done and p.fraction == 1.0, p
            assert p.total_partitions == 4 and p.restoring_partitions == 0, p
            assert p.restored_records == p.total_records >= len(words), p
