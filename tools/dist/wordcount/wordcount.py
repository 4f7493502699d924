# The README's program, installed from the wheel into a fresh venv by
# tools/dist/test.sh. Added around it: commit.interval.ms=100 (results within
# the test, not 30 s), three lines seeded with kcat, and a thread that reads
# word-counts back with kcat, prints the counts and stops the app.
import subprocess
import threading
import time

from polystreams import App

LINES = "the quick brown fox\nthe lazy dog\nthe end\n"
WANT = {"the": 3, "quick": 1, "brown": 1, "fox": 1, "lazy": 1, "dog": 1, "end": 1}


def check(app: App) -> None:
    counts: dict[str, int] = {}
    deadline = time.monotonic() + 90
    while counts != WANT and time.monotonic() < deadline:
        time.sleep(0.5)
        out = subprocess.run(["kcat", "-C", "-b", app.brokers or "", "-t", "word-counts", "-e", "-q", "-s", "value=q", "-f", "%k=%s\n"],
                             capture_output=True, text=True).stdout
        counts = {k: int(v) for k, v in (line.split("=") for line in out.splitlines() if "=" in line)}
    print("counts:", " ".join(f"{k}={counts[k]}" for k in sorted(counts)), flush=True)
    app.stop()


with App("wordcount", {"commit.interval.ms": "100"}) as app:
    (app.stream("lines", value="string")
        .flat_map_values(str.split)
        .group_by(lambda key, word: word, key="string")
        .count()
        .to_stream()
        .to("word-counts"))
    print(app.describe())
    subprocess.run(["kcat", "-P", "-b", app.brokers or "", "-t", "lines"], input=LINES, text=True, check=True)
    threading.Thread(target=check, args=(app,), daemon=True).start()
    app.run()
