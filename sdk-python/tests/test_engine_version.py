"""The SDK refuses an engine of an incompatible version, naming both."""

import pytest

from polystreams import __version__
from polystreams._engine import check_engine_version
from polystreams.errors import FailedPreconditionError


@pytest.mark.parametrize("engine,sdk", [("0.1.0", "0.1.0"), ("0.1.7", "0.1.0"), ("1.4.0", "1.0.2"), ("dev", "0.1.0"), ("", "0.1.0")])
def test_compatible(engine: str, sdk: str) -> None:
    check_engine_version(engine, sdk)


@pytest.mark.parametrize("engine,sdk", [("0.2.0", "0.1.0"), ("99.0.0", "0.1.0"), ("2.0.0", "1.3.0")])
def test_incompatible_names_both(engine: str, sdk: str) -> None:
    with pytest.raises(FailedPreconditionError) as e:
        check_engine_version(engine, sdk)
    assert engine in e.value.message and sdk in e.value.message


def test_own_version_compatible() -> None:
    check_engine_version(__version__, __version__)


def test_versions_agree() -> None:
    """VERSION, pyproject.toml, __version__, the npm and Cargo manifests agree
    (tools/dist/version.py check), when running from a checkout."""
    import subprocess
    import sys
    from pathlib import Path

    tool = Path(__file__).resolve().parents[2] / "tools" / "dist" / "version.py"
    if not tool.is_file():
        pytest.skip("not a checkout of the repository")
    r = subprocess.run([sys.executable, str(tool), "check"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
