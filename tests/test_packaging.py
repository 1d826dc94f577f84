"""What a non-editable install ships: every package of the source tree is listed in
pyproject.toml (setuptools installs only the listed ones, so `schedd sweep` and `schedd
report` were missing from a wheel while an editable install hid it)."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_every_package_is_listed_for_the_wheel():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(config["packages"])
    on_disk = {".".join(p.parent.relative_to(ROOT).parts)
               for p in (ROOT / "schedd").rglob("__init__.py")}
    assert on_disk - listed == set(), "packages missing from pyproject.toml"
    mapped = {name: ROOT / path for name, path in config.get("package-dir", {}).items()}
    assert (mapped["schedd_clients"] / "__init__.py").is_file()
    assert "schedd_clients" in listed
