"""Interpreter discovery: PATH and pyenv-style folders, deduplicated, nothing hard-coded."""

from __future__ import annotations

import os
import sys

from wakelab.harness.interpreters import discover, probe


def _link(folder, name) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    os.symlink(sys.executable, folder / name)


def test_discover_finds_path_and_pyenv_interpreters_once(tmp_path) -> None:
    _link(tmp_path / "bin", "python3")
    _link(tmp_path / "bin", "python3.%d" % sys.version_info[1])
    _link(tmp_path / "pyenv" / "versions" / "x" / "bin", "python3")
    (tmp_path / "bin" / "python3-config").write_text("not a python")
    found = discover(path_env=str(tmp_path / "bin"), pyenv_root=str(tmp_path / "pyenv"))
    assert len(found) == 1
    assert found[0].version[:2] == sys.version_info[:2]
    assert found[0].label == "cpython-%d.%d.%d" % sys.version_info[:3]


def test_probe_of_something_that_is_not_python(tmp_path) -> None:
    fake = tmp_path / "python3"
    fake.write_text("#!/bin/sh\necho nope\n")
    fake.chmod(0o755)
    assert probe(str(fake)) is None
    assert discover(path_env=str(tmp_path), pyenv_root=str(tmp_path / "none")) == []
