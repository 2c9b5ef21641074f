"""The baseline read row by row for the diff (ragsnap.io.baseline) against load_report."""

from __future__ import annotations

import copy
import random
import tracemalloc
from pathlib import Path
from typing import Any

import orjson
import pytest

from conftest import REPO, mutate_json, write_json
from ragsnap.errors import InputError
from ragsnap.io import baseline
from ragsnap.io.baseline import (
    DIFF_CASE_FIELDS,
    BaselineRow,
    _kept,
    _NotCut,
    _read,
    _read_chunked,
    load_baseline,
)
from ragsnap.io.inputs import load_report
from ragsnap.io.jsonio import write_outputs
from ragsnap.scoring.privacy import private_report

BASELINE = REPO / "reports" / "baseline.json"


def report() -> dict[str, Any]:
    """The example project's baseline, parsed whole."""
    data: dict[str, Any] = orjson.loads(BASELINE.read_bytes())
    return data


def outcome(call: Any, path: Path) -> tuple[str, Any]:
    """What reading ``path`` gives: ("error", message and pointer) or ("read", rows)."""
    try:
        data = call(path, "baseline")
    except InputError as exc:
        return "error", (str(exc), exc.pointer)
    return "read", data


def test_a_valid_report_is_read_row_by_row_into_the_fields_the_diff_reads() -> None:
    fast = _read(BASELINE)  # the fast path itself, not its fallback
    whole = load_report(BASELINE, "baseline")
    assert {k: v for k, v in fast.items() if k != "cases"} == {
        k: v for k, v in whole.items() if k != "cases"
    }
    assert fast["cases"] == [
        {k: row[k] for k in DIFF_CASE_FIELDS if k in row} for row in whole["cases"]
    ]
    assert fast == _kept(load_report(BASELINE, "baseline")) == load_baseline(BASELINE)
    assert "contextSources" in whole["cases"][0] and "contextSources" not in fast["cases"][0]
    # a string two rows list is one object
    tops = [s for row in fast["cases"] for s in row["topSources"]]
    first = {}
    for source in tops:
        assert first.setdefault(source, source) is source


def test_a_private_report_and_a_byte_order_mark_are_read_too(tmp_path: Path) -> None:
    private = tmp_path / "private.json"
    private.write_bytes(b"\xef\xbb\xbf" + orjson.dumps(private_report(report())))
    fast = _read(private)
    assert fast["privacy"] is True and "query" not in fast["cases"][0]
    assert fast == _kept(load_report(private, "baseline"))


@pytest.mark.parametrize("chunk", [7, 100, 4096, 1 << 20])
def test_the_writers_layout_is_read_in_chunks_as_read_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk: int
) -> None:
    """Rows cut across chunk boundaries anywhere: the same report as ``_read``, for a
    report and a private one (with a byte order mark) the writer laid out."""
    monkeypatch.setattr(baseline, "_CHUNK", chunk)
    assert _read_chunked(BASELINE) == _read(BASELINE)
    private = tmp_path / "private.json"
    write_outputs({private: private_report(report())})
    private.write_bytes(b"\xef\xbb\xbf" + private.read_bytes())
    fast = _read_chunked(private)
    assert fast["privacy"] is True and fast == _read(private)
    assert list(fast) == list(_read(private))  # the keys in the same order too


def test_a_layout_it_cannot_cut_is_read_whole(tmp_path: Path) -> None:
    compact = tmp_path / "compact.json"
    compact.write_bytes(orjson.dumps(report()))
    with pytest.raises(_NotCut):
        _read_chunked(compact)
    assert load_baseline(compact) == _read(compact)
    # a nested "cases" array laid out as the top level's: the [] / [null] check refuses it
    nested = tmp_path / "nested.json"
    first, second = (
        b"\n    " + orjson.dumps(row, option=orjson.OPT_INDENT_2).replace(b"\n", b"\n    ")
        for row in report()["cases"][:2]
    )
    text = b'{"note": {\n  "cases": [' + first + b"," + second + b"\n  ]\n}, "
    nested.write_bytes(text + orjson.dumps(report())[1:])
    with pytest.raises(_NotCut):
        _read_chunked(nested)
    assert outcome(load_baseline, nested) == outcome(load_report, nested)
    assert outcome(load_report, nested)[0] == "error"  # "note" is not a report field


def test_a_large_report_is_not_held_whole_while_its_rows_are_read(tmp_path: Path) -> None:
    data = report()
    rows = [dict(row, id=f"{row['id']}-{n}") for n in range(100) for row in data["cases"]]
    path = tmp_path / "large.json"
    write_outputs({path: {**data, "cases": rows}})
    size = path.stat().st_size
    peaks = {}
    for read in (_read, _read_chunked):
        tracemalloc.start()
        read(path)
        peaks[read.__name__] = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    assert peaks["_read_chunked"] < peaks["_read"] - size // 2, (peaks, size)


def test_kept_rows_read_and_compare_as_the_dicts_of_their_fields() -> None:
    whole = load_report(BASELINE, "baseline")
    kept = load_baseline(BASELINE)["cases"]
    for row, fields in zip(kept, whole["cases"], strict=True):
        plain = {k: fields[k] for k in DIFF_CASE_FIELDS if k in fields}
        assert type(row) is BaselineRow
        assert row == plain and plain == row
        assert list(row) == [k for k in DIFF_CASE_FIELDS if k in plain] and len(row) == len(plain)
        assert dict(row) == plain and copy.deepcopy(row) == row
        assert "contextSources" not in row and row.get("contextSources", 1) == 1
        with pytest.raises(KeyError):
            row["contextSources"]
        for name, items in (plain.get("coverage") or {}).items():  # entries: as their dicts
            assert row["coverage"][name] == items and items == row["coverage"][name]
            for item, entry in zip(row["coverage"][name], items, strict=True):
                assert dict(item) == entry and item["target"] == entry["target"]
                assert item != {**entry, "target": "other"} != item
                assert item != {**entry, "extra": 1}
    assert kept[0] != {**dict(kept[0]), "id": "other"}
    private = _kept(private_report(whole))["cases"][0]
    assert "query" not in private and private.get("query") is None
    with pytest.raises(KeyError):
        private["query"]


def test_kept_rows_take_less_memory_than_the_file(tmp_path: Path) -> None:
    """The kept rows of a 3,000-row baseline: 1.10 x its file's size traced (as dicts
    of their fields, 1.77 x)."""
    data = report()
    rows = [dict(row, id=f"{row['id']}-{n}") for n in range(100) for row in data["cases"]]
    path = tmp_path / "large.json"
    write_outputs({path: {**data, "cases": rows}})
    del rows
    tracemalloc.start()
    kept = load_baseline(path)
    held = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    assert len(kept["cases"]) == 3000
    assert held < 1.4 * path.stat().st_size, (held, path.stat().st_size)


def _write(path: Path, data: Any) -> Path:
    return write_json(path, data)


def _broken(tmp_path: Path, name: str) -> Path:
    data = report()
    rows = data["cases"]
    path = tmp_path / f"{name}.json"
    if name == "row-unknown-field":
        rows[3]["contextSource"] = []
    elif name == "row-missing-field":
        del rows[0]["passed"]
    elif name == "row-bad-type":
        rows[-1]["evidenceCount"] = "3"
    elif name == "duplicate-case":
        rows.append(copy.deepcopy(rows[1]))
    elif name == "top-unknown-field":
        data["extra"] = 1
    elif name == "cases-not-a-list":
        data["cases"] = {"a": rows[0]}
    elif name == "no-cases":
        del data["cases"]
    elif name == "other-kind":
        data["kind"] = "ragsnap-diff-report"
    elif name == "old-version":
        data["schemaVersion"] = 0
    elif name == "private-with-a-query":
        data = private_report(data)
        data["cases"][0]["query"] = "q"
    elif name == "golden-cases":
        data = {"schemaVersion": 1, "cases": []}
    elif name == "fixture":
        data = {"caseId": "a", "lookupResult": {}}
    elif name == "not-an-object":
        data = [data]
    if name == "truncated":
        path.write_bytes(orjson.dumps(data)[:-2])
    elif name == "nan-in-a-row":
        text = orjson.dumps(data).replace(b'"evidenceCount":', b'"evidenceCount":NaN,"x":', 1)
        path.write_bytes(text)
    elif name == "trailing-text":
        path.write_bytes(orjson.dumps(data) + b" x")
    elif name == "not-utf8":
        path.write_bytes(orjson.dumps(data).replace(b"rag-eval", b"rag-\xffval", 1))
    elif name != "missing":
        _write(path, data)
    return path


@pytest.mark.parametrize(
    "name",
    [
        "row-unknown-field",
        "row-missing-field",
        "row-bad-type",
        "duplicate-case",
        "top-unknown-field",
        "cases-not-a-list",
        "no-cases",
        "other-kind",
        "old-version",
        "private-with-a-query",
        "golden-cases",
        "fixture",
        "not-an-object",
        "truncated",
        "nan-in-a-row",
        "trailing-text",
        "not-utf8",
        "missing",
    ],
)
def test_what_load_report_rejects_is_rejected_with_its_message(tmp_path: Path, name: str) -> None:
    path = _broken(tmp_path, name)
    expected = outcome(load_report, path)
    assert expected[0] == "error"
    assert outcome(load_baseline, path) == expected


def test_mutated_reports_read_as_load_report_reads_them(tmp_path: Path) -> None:
    """Random structural changes (the fuzz tests' mutator): the same error, or the
    same report cut to the diff's fields."""
    rng = random.Random(20261205)
    odd = [None, "", "x", -1, 0, 1.5, True, [], {}, [1], {"a": 1}]
    base = report()
    errors = 0
    for index in range(80):
        data = copy.deepcopy(base)
        for _ in range(rng.randrange(1, 3)):
            mutate_json(data, rng, odd)
        path = _write(tmp_path / f"m{index}.json", data)
        expected = outcome(load_report, path)
        if expected[0] == "read":
            expected = ("read", _kept(expected[1]))
        else:
            errors += 1
        assert outcome(load_baseline, path) == expected, index
    assert errors > 40  # most mutations break the report
