"""Markdown tables (ragsnap.io.markdown), checked against tabulate as the reference."""

from __future__ import annotations

from tabulate import tabulate

from ragsnap.io.markdown import cell, markdown_table


def test_layout_matches_tabulate_github() -> None:
    headers = ["case", "hit level", "first rank", "fallback"]
    rows = [
        ["db-err-4031", "strong", "1", "filtered-empty, filtered-weak"],
        ["a-much-longer-case-identifier", "medium", "10", "-"],
        ["x", "weak", "-", "x"],
    ]
    expected = tabulate(rows, headers=headers, tablefmt="github", disable_numparse=True)
    assert markdown_table(headers, rows) == expected


def test_cells() -> None:
    assert [cell(None), cell(True), cell(False), cell([]), cell(["a", "b"])] == [
        "-",
        "yes",
        "no",
        "-",
        "a, b",
    ]
    assert cell("a|b\nc") == "a\\|b c"
    assert markdown_table(["x"], [[None], ["缓存"]]) == "| x   |\n|-----|\n| -   |\n| 缓存  |"
