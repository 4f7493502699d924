"""Hatchling build hook: a platform wheel carries the engine.

With POLYSTREAMS_WHEEL_ENGINE (the engine binary) and
POLYSTREAMS_WHEEL_PLATFORM (a platform tag such as manylinux_2_17_x86_64)
set, the wheel holds the binary as polystreams/_bin/polystreams, which
find_engine() prefers to PATH, and is tagged py3-none-<platform>. Without
them the wheel is pure (py3-none-any) and finds the engine as a checkout
does. tools/dist/build.sh builds one wheel per platform this way.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface


class EngineBuildHook(BuildHookInterface):  # type: ignore[type-arg]
    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        engine = os.environ.get("POLYSTREAMS_WHEEL_ENGINE")
        platform = os.environ.get("POLYSTREAMS_WHEEL_PLATFORM")
        if self.target_name != "wheel" or not (engine or platform):
            return
        if not (engine and platform):
            raise ValueError("hatch_build: POLYSTREAMS_WHEEL_ENGINE and POLYSTREAMS_WHEEL_PLATFORM go together")
        binary = Path(engine).resolve()
        if not binary.is_file() or not os.access(binary, os.X_OK):
            raise ValueError(f"hatch_build: POLYSTREAMS_WHEEL_ENGINE {engine}: not an executable file")
        build_data["pure_python"] = False
        build_data["tag"] = f"py3-none-{platform}"
        build_data["force_include"][str(binary)] = "polystreams/_bin/polystreams"
