# The example of docs/testing.md (Python), run as it is printed there.
from polystreams import Config
from polystreams.testing import TopologyTestDriver


def build_word_count(driver: TopologyTestDriver) -> None:
    (driver.stream("lines", value="string")
        .flat_map_values(str.split)
        .group_by(lambda key, word: word, key="string")
        .count(materialized="counts")
        .to_stream()
        .to("word-counts"))


def test_word_count() -> None:
    with TopologyTestDriver("wordcount", Config(statestore_cache_max_bytes=0)) as driver:
        build_word_count(driver)
        driver.pipe_input("lines", None, "the cat", timestamp=1_000)
        driver.pipe_input("lines", None, "the dog", timestamp=2_000)
        assert [(r.key, r.value) for r in driver.read_output("word-counts")] == [
            ("the", 1), ("cat", 1), ("the", 2), ("dog", 1),
        ]
        assert driver.get_store("counts").get("the") == 2


def test_word_count_with_the_record_cache() -> None:
    # The cache (on by default) is flushed after each piped record, so each
    # line yields the latest count of each of its words once.
    with TopologyTestDriver("wordcount") as driver:
        build_word_count(driver)
        driver.pipe_input("lines", None, "b a b")
        assert driver.read_key_values_to_map("word-counts") == {"a": 1, "b": 2}


def test_the_guide_prints_the_examples_as_they_run() -> None:
    # docs/testing.md shows each SDK's example file verbatim; this keeps
    # the guide's code the code that is tested.
    from pathlib import Path

    repo = Path(__file__).resolve().parents[3]
    guide = (repo / "docs" / "testing.md").read_text()
    for example in [
        "core/streams/testing_guide_test.go",
        "sdk-node/src/testing_guide.e2e.test.ts",
        "sdk-rust/tests/testing_guide.rs",
    ]:
        assert (repo / example).read_text() in guide, f"docs/testing.md does not show {example} as it is"
    this = Path(__file__).read_text()
    assert this[: this.index("\n\n\ndef test_the_guide")] in guide, "docs/testing.md does not show the Python example as it is"
