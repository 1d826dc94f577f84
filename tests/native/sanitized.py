"""A pytest plugin for `make sanitize`: the five C modules are imported from the sanitized
build in $SCHEDD_SANITIZED_DIR (tests/native/build_sanitized.py) instead of the normal
build, and the session stops at once if any of them came from elsewhere, so that a
clean `make sanitize` always means the instrumented code ran.

    PYTHONPATH=tests/native SCHEDD_SANITIZED_DIR=build/sanitize \\
        LD_PRELOAD=$(gcc -print-file-name=libasan.so) ASAN_OPTIONS=detect_leaks=0 \\
        python -m pytest -p sanitized tests/test_row_text.py ...
"""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import os
import sys
import sysconfig
from pathlib import Path
from typing import Any

import pytest
from build_sanitized import MODULES


class SanitizedModules:
    """A finder of the five modules in the sanitized folder (first on sys.meta_path)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.suffix = sysconfig.get_config_var("EXT_SUFFIX")

    def path(self, name: str) -> Path:
        return self.root.joinpath(*name.split(".")).with_name(name.rsplit(".", 1)[1]
                                                              + self.suffix)

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name not in MODULES:
            return None
        file = self.path(name)
        loader = importlib.machinery.ExtensionFileLoader(name, str(file))
        return importlib.util.spec_from_file_location(name, file, loader=loader)


def _root() -> Path:
    folder = os.environ.get("SCHEDD_SANITIZED_DIR")
    if not folder:
        raise pytest.UsageError("-p sanitized needs SCHEDD_SANITIZED_DIR (the folder "
                                "build_sanitized.py built)")
    return Path(folder).resolve()


def pytest_configure(config: pytest.Config) -> None:
    early = [name for name in MODULES if name in sys.modules]
    if early:
        raise pytest.UsageError(f"imported before the sanitized build could be: {early}")
    finder = SanitizedModules(_root())
    missing = [str(finder.path(n)) for n in MODULES if not finder.path(n).is_file()]
    if missing:
        raise pytest.UsageError(f"not built: {missing}")
    sys.meta_path.insert(0, finder)


def pytest_report_header(config: pytest.Config) -> str:
    return f"C modules: the sanitized build in {_root()}"


def pytest_collection_finish(session: pytest.Session) -> None:
    """Every module is the sanitized one (imported now if no test module did)."""
    root = _root()
    for name in MODULES:
        module = importlib.import_module(name)
        if not Path(module.__file__ or "").resolve().is_relative_to(root):
            raise pytest.UsageError(f"{name} came from {module.__file__}, not {root}")
