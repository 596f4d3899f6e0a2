"""Evidence bundle: atomic writes, the schema, and the validating loader."""

from __future__ import annotations

import json
import os

import pytest

from wakelab.errors import EvidenceError
from wakelab.evidence import bundle
from wakelab.evidence.load import load_matrix, load_summary, summary_schema, validate_summary


def _write(tmp_path, doc) -> str:
    path = tmp_path / "summary.json"
    path.write_text(json.dumps(doc) if not isinstance(doc, str) else doc, encoding="utf-8")
    return str(path)


def test_fixture_summary_is_valid(lab135_summary) -> None:
    validate_summary(lab135_summary)


def test_write_bundle_then_load_round_trips(tmp_path, lab135_summary) -> None:
    bundle.write_bundle(str(tmp_path), lab135_summary, "text\n")
    assert load_summary(str(tmp_path)) == json.loads(json.dumps(lab135_summary))
    assert (tmp_path / "summary.txt").read_text(encoding="utf-8") == "text\n"
    assert sorted(os.listdir(tmp_path)) == ["summary.json", "summary.txt"]  # no temp files left


def test_atomic_write_keeps_old_file_when_writing_fails(tmp_path) -> None:
    target = tmp_path / "f.txt"
    bundle.atomic_write_text(str(target), "old\n")

    class Boom:
        def __str__(self) -> str:
            raise RuntimeError("boom")

    with pytest.raises(TypeError):
        bundle.atomic_write_text(str(target), Boom())  # type: ignore[arg-type]
    assert target.read_text() == "old\n"
    assert os.listdir(tmp_path) == ["f.txt"]


def test_create_unique_folder_never_reuses(tmp_path) -> None:
    a = bundle.create_unique_folder(str(tmp_path), "run")
    b = bundle.create_unique_folder(str(tmp_path), "run")
    assert a != b and os.path.basename(b) == "run-2"


def test_every_schema_property_is_documented() -> None:
    missing = []

    def walk(node, where):
        if isinstance(node, dict):
            for name, sub in (node.get("properties") or {}).items():
                if "description" not in sub:
                    missing.append(where + "/" + name)
                walk(sub, where + "/" + name)
            for name, sub in (node.get("$defs") or {}).items():
                walk(sub, "$defs/" + name)

    walk(summary_schema(), "")
    assert missing == []


@pytest.mark.parametrize(
    "content, message",
    [
        ('{"schema": "wakelab.summary", "schema_version": 1, "arms": [', "is not valid JSON (line 1"),
        ("[1, 2]", "top level is list"),
        ('{"hello": 1}', 'no "schema": "wakelab.summary"'),
        ('{"schema": "wakelab.summary", "schema_version": 99}', "schema version 99, newer than this wakelab reads (1)"),
        ('{"schema": "wakelab.summary", "schema_version": 1, "x": NaN}', "NaN is not valid JSON"),
        ("[" * 100000 + "]" * 100000, "nested too deeply"),
        ("\xff\xfe", "not valid JSON"),
    ],
)
def test_loader_rejects_bad_files_with_one_line(tmp_path, content, message) -> None:
    with pytest.raises(EvidenceError) as info:
        load_summary(_write(tmp_path, content))
    assert message in str(info.value)
    assert "\n" not in str(info.value)


def test_loader_names_the_bad_field(tmp_path, lab135_summary) -> None:
    lab135_summary["arms"][0]["latency"]["p50_ns"] = "fast"
    with pytest.raises(EvidenceError) as info:
        load_summary(_write(tmp_path, lab135_summary))
    assert "at arms/0/latency" in str(info.value)


def test_a_matrix_is_checked_as_a_summary_is(tmp_path) -> None:
    """matrix.json's schema errors are worded as summary.json's: one line, the place, a long message cut and marked."""
    matrix = {"schema": "wakelab.matrix", "schema_version": 1, "lab": {"id": "x", "title": "x"}, "started_utc": "",
              "dimensions": [], "complete": True, "arms": [],
              "cells": [{"label": "a", "folder": "cells/a", "dimensions": {}, "status": "x" * 500, "complete": True,
                         "interpreter": None}]}
    (tmp_path / "matrix.json").write_text(json.dumps(matrix), encoding="utf-8")
    with pytest.raises(EvidenceError) as info:
        load_matrix(str(tmp_path))
    message = str(info.value)
    assert "is not a valid wakelab matrix: at cells/0/status: 'xxx" in message and message.endswith("...")
    assert "\n" not in message


def test_loader_missing_file_and_folder(tmp_path) -> None:
    with pytest.raises(EvidenceError, match="no such file"):
        load_summary(str(tmp_path / "nope.json"))
    with pytest.raises(EvidenceError, match="summary.json: no such file"):
        load_summary(str(tmp_path))


def test_loader_rejects_non_utf8(tmp_path) -> None:
    path = tmp_path / "summary.json"
    path.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(EvidenceError, match="not UTF-8"):
        load_summary(str(path))


def test_load_samples_of_a_real_run(tmp_path, tiny_params) -> None:
    from wakelab.evidence.load import load_samples
    from wakelab.harness.runner import RunPlan, run_plan
    from wakelab.labs import LAB_135

    summary = run_plan(RunPlan(lab=LAB_135, arm_names=["event", "signal-install"], params=tiny_params, folder=str(tmp_path)))
    event = load_samples(str(tmp_path), summary["arms"][0])
    assert len(event["samples_ns"]) == tiny_params.n
    install = load_samples(str(tmp_path), summary["arms"][1])
    assert len(install["round_ns"]) == tiny_params.rounds


@pytest.mark.parametrize(
    "samples_file, content, message",
    [
        ("../outside.json", None, "points outside the bundle"),
        ("samples/event.json", '{"schema": "x"}', "not a wakelab samples file"),
        ("samples/event.json", '{"schema": "wakelab.samples", "arm": "other"}', "holds samples of arm 'other'"),
        ("samples/event.json", '{"schema": "wakelab.samples", "arm": "event", "kind": "latency", "samples_ns": [1, -2]}', "non-negative integers"),
        ("samples/event.json", '{"schema": "wakelab.samples", "arm": "event", "kind": "latency", "samples_ns": [1.5]}', "non-negative integers"),
        ("samples/missing.json", None, "cannot read"),
    ],
)
def test_load_samples_rejects_bad_files(tmp_path, samples_file, content, message) -> None:
    from wakelab.evidence.load import load_samples

    (tmp_path / "samples").mkdir()
    if content is not None:
        (tmp_path / samples_file).write_text(content, encoding="utf-8")
    with pytest.raises(EvidenceError, match=message):
        load_samples(str(tmp_path), {"name": "event", "samples_file": samples_file, "status": "ok"})


def test_clearing_a_bundle_takes_its_exports_and_temporary_files_but_never_enters_a_link(tmp_path) -> None:
    folder, elsewhere = tmp_path / "b", tmp_path / "elsewhere"
    for made in (folder / "export" / "pyperf", folder / "cells" / "c", elsewhere / "pyperf"):
        made.mkdir(parents=True)
    for path in ("export/run.csv", "export/run.md", "export/pyperf/run.json", "export/notes.txt", ".summary.json.abc.tmp",
                 "summary.txt", "mine.txt", "../elsewhere/run.csv", "../elsewhere/pyperf/run.json"):
        (folder / path).write_text("x")
    (folder / "cells" / "c" / "export").symlink_to(elsewhere)

    removed = bundle.clear_bundle(str(folder))

    assert sorted(os.path.relpath(p, folder) for p in removed) == [
        ".summary.json.abc.tmp", "export/pyperf/run.json", "export/run.csv", "export/run.md", "summary.txt"]
    assert sorted(os.listdir(folder)) == ["cells", "export", "mine.txt"] and os.listdir(folder / "export") == ["notes.txt"]
    assert sorted(os.listdir(elsewhere)) == ["pyperf", "run.csv"] and os.listdir(elsewhere / "pyperf") == ["run.json"]


def test_samples_the_summary_does_not_name_are_removed_and_nothing_else(tmp_path) -> None:
    (tmp_path / "samples").mkdir()
    for name in ("event.json", "old.json", "README"):
        (tmp_path / "samples" / name).write_text("x")
    assert bundle.remove_unnamed_samples(str(tmp_path)) == []  # no summary.json: nothing is known to be unnamed
    (tmp_path / "summary.json").write_text(json.dumps({"arms": [{"name": "event", "samples_file": "samples/event.json"}, "x"]}))
    assert bundle.remove_unnamed_samples(str(tmp_path)) == [str(tmp_path / "samples" / "old.json")]
    assert sorted(os.listdir(tmp_path / "samples")) == ["README", "event.json"]
