"""The exceptions ragsnap raises on purpose.

Every error a user can cause is one of these; anything else is a bug. The
command line prints ``Kind: message`` for a ``RagsnapError`` and exits with
its ``exit_code``; any other exception is reported in one line as an internal
error with exit code 3 (``INTERNAL_ERROR``), never 1, which means "a case
failed or a regression", so CI can tell a bug from a regression; ``--debug``
or ``RAGSNAP_DEBUG=1`` shows its traceback::

    RagsnapError                  base class, exit code 2
    ├── UsageError                a flag or argument combination that cannot work
    ├── InputError                a file that cannot be read, parsed or validated;
    │                             carries the file, the JSON pointer and the fix
    ├── OutputError               a report that cannot be written safely
    │                             (symlinked destination, unwritable folder)
    ├── BackendError              a knowledge base or service that cannot do what
    │   │                         was asked (missing, built differently, unreachable)
    │   ├── ServiceUnreachable    a service that did not answer at all, after retries
    │   ├── KnowledgeBaseBusy     another process is writing the knowledge base
    │   └── EmbedderError         an embedder that cannot produce a vector
    ├── MissingDependency         an optional extra is not installed; says which
    └── BudgetExhausted           a run stopped at its request budget, work saved;
                                  says how to continue

Every message ends with the next step the user should take; where the user
mistyped a name (a subcommand, a field, a method, a measure, a config key),
``did_you_mean`` adds the closest known one.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from pathlib import Path

__all__ = [
    "INTERNAL_ERROR",
    "BackendError",
    "BudgetExhausted",
    "EmbedderError",
    "InputError",
    "KnowledgeBaseBusy",
    "MissingDependency",
    "OutputError",
    "RagsnapError",
    "ServiceUnreachable",
    "UsageError",
    "did_you_mean",
]


#: the exit code of a bug (an exception that is not a ``RagsnapError``)
INTERNAL_ERROR = 3


def did_you_mean(word: str, known: Iterable[str]) -> str | None:
    """The known name closest to the mistyped ``word`` (``difflib``, ratio at least
    0.6, case-insensitive), or None when none is close; ``word`` itself never."""
    names = {name.lower(): name for name in known if name != word}
    close = difflib.get_close_matches(word.lower(), list(names), n=1, cutoff=0.6)
    return names[close[0]] if close else None


class RagsnapError(Exception):
    """Base class: an error the user can fix; the CLI exits with ``exit_code``."""

    exit_code = 2

    @property
    def kind(self) -> str:
        """The name printed before the message, e.g. ``InputError``."""
        return type(self).__name__


class UsageError(RagsnapError):
    """Flags or arguments that cannot work together."""


class InputError(RagsnapError):
    """A file that cannot be read or does not satisfy its contract.

    The message reads ``<file> at <pointer>: <problem>; <fix>``; ``pointer`` is
    an RFC 6901 JSON pointer (``/cases/3/topK``) or a ``line N`` location, and is
    left out when the problem concerns the whole file.
    """

    def __init__(self, path: Path | str, problem: str, fix: str, pointer: str | None = None):
        self.path = str(path)
        self.problem = problem
        self.fix = fix
        self.pointer = pointer
        where = f"{self.path} at {pointer}" if pointer else self.path
        super().__init__(f"{where}: {problem}; {fix}")


class OutputError(RagsnapError):
    """A report or fixture that cannot be written safely."""


class BackendError(RagsnapError):
    """A knowledge base or service that cannot serve the request."""


class KnowledgeBaseBusy(BackendError):
    """Another writer holds the knowledge base's writer lock (see ``ragsnap.io.locks``)."""


class ServiceUnreachable(BackendError):
    """A service that did not answer at all (connection refused, timed out), after retries."""


class EmbedderError(BackendError):
    """An embedder that cannot produce a vector (service down, vector missing)."""


class MissingDependency(RagsnapError):
    """An optional dependency is missing; the message names the extra to install."""

    def __init__(self, feature: str, extra: str):
        super().__init__(f"{feature} is not available. To install: pip install 'ragsnap[{extra}]'")


class BudgetExhausted(RagsnapError):
    """A run reached its budget (``--max-requests``) and stopped cleanly, its work saved."""
