"""GitHub-flavoured Markdown tables, fast enough for one row per case.

The layout is byte-for-byte that of ``tabulate(rows, headers, tablefmt="github",
disable_numparse=True)`` with left-aligned columns (a test checks this against
tabulate), at a twentieth of the cost: a 10,000-row table takes ~30 ms instead
of ~600 ms. Widths are counted in code points, so wide (CJK) characters are not
padded to their display width; GitHub renders the table the same either way.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["cell", "markdown_table"]


def cell(value: Any) -> str:
    """Render a value for a table cell: ``None`` and empty lists as ``-``, booleans
    as yes/no, lists comma-joined; pipes escaped and newlines folded."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (list, tuple)):
        value = ", ".join(map(str, value)) if value else "-"
    return str(value).replace("|", "\\|").replace("\n", " ")


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A left-aligned pipe table; every value goes through ``cell``."""
    # a string takes ``cell``'s path inline: a row per case makes 100,000s of cells
    body = [
        [v.replace("|", "\\|").replace("\n", " ") if type(v) is str else cell(v) for v in row]
        for row in rows
    ]
    head = [cell(h) for h in headers]
    columns = zip(head, *body, strict=True)  # every row as long as the header
    # like tabulate, a column is at least two wider than its header
    widths = [max(len(col[0]) + 2, *map(len, col)) for col in columns]

    def line(values: Sequence[str]) -> str:
        return "| " + " | ".join(v.ljust(w) for v, w in zip(values, widths, strict=True)) + " |"

    rule = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    return "\n".join([line(head), rule, *map(line, body)])
