r"""Label hygiene: golden cases checked against the seed corpus they were written for.

Pure functions over validated cases (``GoldenCase``), the cases file's parsed
JSON and an index of the seed corpus (``CorpusIndex``, built in one pass: every
document's ids and the number of chunks ``ragsnap seed`` cuts it into with the
configured chunk settings, and the text of the documents the cases judge).
``ragsnap check`` reads the files and prints what these return. Each
``Finding`` names the JSON pointer of the offending value, the problem and
the fix, and is an **error** (the label is wrong: a scored number would be
wrong or the case could never pass) or a **warning** (the set is weaker than
it should be).

Errors:

* ``missing-target``: a judgment's target (its ``chunkId``, ``docId`` or
  ``source``), or a value of ``expectedSources``, ``expectedDocIds``,
  ``expectedContextSources`` or ``expectedRerankTopSource``, names nothing in
  the corpus. Sources and document ids are the frontmatter's ``source`` and
  ``doc_id``; chunk ids are ``<source>#<n>`` as the configured chunking cuts
  the body.
* ``span-not-verbatim``: an answer span is not an exact substring (no
  normalisation: spans are scored verbatim) of its target's text: the chunk's
  for a ``chunkId`` judgment, the document body's for ``docId`` and
  ``source``. A span found in the document but not in the judged chunk says
  which chunks hold it.
* ``out-of-scope``: a value of those expectations, or the target of a judgment
  with a grade above 0, is a document of another ``kb_scope`` than the case's
  ``kbScope`` (or of none): lookups never leave their scope, so it can never
  be returned. Cases without a ``kbScope`` are not checked.
* ``breadcrumb``: an ``expectedBreadcrumbs`` value is not a segment prefix
  (``scoring.hits.breadcrumb_covers``: split on ``>``, trimmed, NFKC and
  case-folded) of any document's breadcrumb, so breadcrumb coverage could
  never be complete.
* ``secret``, ``absolute-path``, ``endpoint``: a string anywhere in the cases
  file (queries, notes, expectations, spans, the description) matches one of
  ``PRIVACY_RULES``: an API key or token (``sk-``, ``AKIA``, ``ghp_``, ``xox``,
  a JWT, ``Bearer ...``, ``password=``, a private key block, ``user:pass@`` in
  a URL, or a long random-looking token, ``looks_random``), a path that names
  a user or a machine (``/home/``, ``/Users/``, ``/root/``, ``/Volumes/``,
  ``C:\``, ``\\server\``, ``~/``; system paths such as ``/var/lib/mysql``
  are documentation and pass), or an endpoint (``scheme://``, ``host:port``).
  Golden cases are committed, shared and quoted in reports; credentials,
  personal paths and service addresses do not belong in them. A path or
  endpoint that an answer span or expected keyword quotes verbatim from the
  corpus passes (the corpus already holds it, and a span must be verbatim);
  a secret never does. The finding never repeats the matched text, only the
  rule and the character offset, so a report of it leaks nothing either.
* ``no-answer-coverage``: a language with answerable cases but no
  ``noAnswer`` case while the set has no-answer cases in another language,
  so no-answer false positives are measured in one language and never in
  this one (GoodBuddy's rule: every language's no-answer false positives are
  measured). A project that cannot have one opts out with
  ``scoring.noAnswerCoverage: warning`` in ragsnap.yaml, which makes it a
  **warning** (the set is weaker than it should be; printed, never
  failing). A set with no no-answer case at all (a public IR collection
  imported as it is: Cranfield, BEIR, TREC have none) gets one warning: it
  does not measure no-answer false positives anywhere, which its reports
  show as n/a.
"""

from __future__ import annotations

import difflib
import math
import re
from collections import Counter
from collections.abc import Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from ..kb.corpus import ChunkSettings, SeedDocument, chunk_document
from ..models import GoldenCase
from .hits import breadcrumb_covers

__all__ = [
    "PRIVACY_RULES",
    "CorpusIndex",
    "Finding",
    "PrivacyRule",
    "Severity",
    "check_cases",
    "check_labels",
    "check_no_answer_coverage",
    "check_privacy",
    "looks_random",
    "needed_documents",
    "quote_candidates",
]

Severity = Literal["error", "warning"]


@dataclass(frozen=True, slots=True)
class Finding:
    """One problem with one value of the cases file."""

    severity: Severity
    code: str
    pointer: str
    problem: str
    fix: str

    def line(self, file: str) -> str:
        """``error: FILE at POINTER: problem; fix``, as an ``InputError`` reads."""
        return f"{self.severity}: {file} at {self.pointer}: {self.problem}; {self.fix}"

    def to_json(self) -> dict[str, str]:
        return {
            "severity": self.severity,
            "code": self.code,
            "pointer": self.pointer,
            "problem": self.problem,
            "fix": self.fix,
        }


def _pointer_key(pointer: str) -> tuple[tuple[int, int | str], ...]:
    """Order pointers as the file does: ``/cases/2`` before ``/cases/10``."""
    return tuple((0, int(p)) if p.isdigit() else (1, p) for p in pointer.split("/"))


def _escape(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


def _excerpt(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


# ---------------------------------------------------------------- the corpus


@dataclass(frozen=True)
class CorpusIndex:
    """What labels may name, read in one pass over the seed corpus.

    Every document leaves its ids (source, doc_id, its number of chunks: chunk ids
    are ``<source>#0`` .. ``#n-1``) and its breadcrumb; only the documents the cases
    name (``keep``) leave their body and chunk texts, so a large corpus is checked
    in memory for its ids, not its text. ``quotes`` are strings to look for in every
    body (``quote_candidates``); ``quoted`` holds those found.
    """

    #: source -> doc_id (None when the document has none)
    sources: dict[str, str | None]
    #: doc_id -> source (the first document with it)
    doc_ids: dict[str, str]
    #: source -> number of chunks
    chunk_counts: dict[str, int]
    breadcrumbs: frozenset[str]
    #: source -> body, for the kept documents
    bodies: dict[str, str] = field(default_factory=dict)
    #: chunk id -> text, for the kept documents
    chunk_texts: dict[str, str] = field(default_factory=dict)
    quoted: frozenset[str] = frozenset()
    settings: ChunkSettings = field(default_factory=ChunkSettings)
    #: source -> kb_scope, for the documents that have one
    scopes: dict[str, str] = field(default_factory=dict)

    @classmethod
    def build(
        cls,
        docs: Iterable[SeedDocument],
        settings: ChunkSettings,
        *,
        keep: Collection[str] | None = None,
        quotes: Collection[str] = (),
    ) -> CorpusIndex:
        """Index ``docs`` and their chunks cut with ``settings`` (as ``ragsnap seed``
        does). ``keep``: the sources and doc ids whose text is kept (None: all)."""
        sources: dict[str, str | None] = {}
        doc_ids: dict[str, str] = {}
        counts: dict[str, int] = {}
        breadcrumbs: set[str] = set()
        bodies: dict[str, str] = {}
        texts: dict[str, str] = {}
        quoted: set[str] = set()
        scopes: dict[str, str] = {}
        for doc in docs:
            sources[doc.source] = doc.doc_id
            if doc.kb_scope is not None:
                scopes[doc.source] = doc.kb_scope
            if doc.doc_id is not None:
                doc_ids.setdefault(doc.doc_id, doc.source)
            if doc.breadcrumb:
                breadcrumbs.add(doc.breadcrumb)
            cut = chunk_document(doc, settings)
            counts[doc.source] = len(cut)
            if (
                keep is None
                or doc.source in keep
                or (doc.doc_id is not None and doc.doc_id in keep)
            ):
                bodies[doc.source] = doc.body
                texts.update((c.chunk_id, c.text) for c in cut)
            quoted.update(q for q in quotes if q not in quoted and q in doc.body)
        return cls(
            sources,
            doc_ids,
            counts,
            frozenset(breadcrumbs),
            bodies,
            texts,
            frozenset(quoted),
            settings,
            scopes,
        )

    def source_of(self, kind: str, target: str) -> str | None:
        """The source of the document a ``source`` / ``docId`` / ``chunkId`` value
        names; None when it names nothing."""
        if kind == "source":
            return target if target in self.sources else None
        if kind == "docId":
            return self.doc_ids.get(target)
        source, _, ordinal = target.rpartition("#")
        count = self.chunk_counts.get(source)
        if count is None or not ordinal.isdigit() or str(int(ordinal)) != ordinal:
            return None
        return source if int(ordinal) < count else None

    def text(self, kind: str, target: str) -> str | None:
        """The text a judgment's spans are copied from: the chunk's, else the body
        (None when it names nothing or its document was not kept)."""
        if kind == "chunkId":
            return self.chunk_texts.get(target)
        source = self.source_of(kind, target)
        return None if source is None else self.bodies.get(source)

    def chunk_ids(self, source: str) -> list[str]:
        return [f"{source}#{n}" for n in range(self.chunk_counts.get(source, 0))]


def needed_documents(cases: Iterable[GoldenCase]) -> set[str]:
    """The sources and doc ids whose text ``check_labels`` reads: the targets of
    judgments with spans (a chunk id's source)."""
    keep: set[str] = set()
    for case in cases:
        for judgment in case.judgments:
            if judgment.spans:
                target = judgment.target
                keep.add(target.rpartition("#")[0] if judgment.kind == "chunkId" else target)
    return keep


_KIND_NAMES = {"source": "source", "docId": "document id", "chunkId": "chunk"}


#: above this many ids no "did you mean" is computed (difflib is linear in them)
_HINT_LIMIT = 20_000


def _missing(corpus: CorpusIndex, kind: str, value: str, pointer: str) -> Finding | None:
    """A ``missing-target`` finding when ``value`` names nothing in the corpus."""
    if corpus.source_of(kind, value) is not None:
        return None
    known: Collection[str]
    if kind == "chunkId":
        source = value.rpartition("#")[0]
        count = corpus.chunk_counts.get(source)
        if count is not None:
            s = corpus.settings
            return Finding(
                "error",
                "missing-target",
                pointer,
                f"chunk {value!r} does not exist: {source!r} is cut into {count} chunk(s), "
                f"#0..#{count - 1} (maxChars {s.max_chars}, overlapChars "
                f"{s.overlap_chars}, headingLevel {s.heading_level})",
                "judge one of those chunks (the one that holds the answer), or check the "
                "chunk settings in ragsnap.yaml",
            )
        known = corpus.sources  # the source part is what is wrong
        value_for_hint = source
    else:
        known = corpus.sources if kind == "source" else corpus.doc_ids
        value_for_hint = value
    close = (
        difflib.get_close_matches(value_for_hint, list(known), n=1, cutoff=0.75)
        if len(known) <= _HINT_LIMIT
        else []
    )
    if close and kind == "chunkId":
        close = [f"{close[0]}#{value.rpartition('#')[2]}"]
    hint = f"did you mean {close[0]!r}? " if close else ""
    field_name = "doc_id" if kind == "docId" else "source"
    return Finding(
        "error",
        "missing-target",
        pointer,
        f"{_KIND_NAMES[kind]} {value!r} is not in the seed corpus",
        f"{hint}name an existing {_KIND_NAMES[kind]} (the seed documents' `{field_name}`"
        + (", then `#<n>`" if kind == "chunkId" else "")
        + "), or add the document to the seed corpus",
    )


def _span_finding(
    corpus: CorpusIndex, kind: str, target: str, span: str, pointer: str
) -> Finding | None:
    text = corpus.text(kind, target)
    source = corpus.source_of(kind, target)
    if text is None or source is None or span in text:
        return None
    body = corpus.bodies[source]
    if kind == "chunkId" and span in body:
        holders = [c for c in corpus.chunk_ids(source) if span in corpus.chunk_texts[c]]
        where = (
            f"it is in {', '.join(repr(c) for c in holders)}"
            if holders
            else "it crosses a chunk boundary"
        )
        return Finding(
            "error",
            "span-not-verbatim",
            pointer,
            f"span {_excerpt(span)!r} is in {source!r} but not in the judged chunk "
            f"{target!r} ({where})",
            "judge the chunk that holds the span, or quote a shorter span from the judged chunk",
        )
    what = f"chunk {target!r}" if kind == "chunkId" else f"the body of {source!r}"
    near = _loose(span) in _loose(text)
    return Finding(
        "error",
        "span-not-verbatim",
        pointer,
        f"span {_excerpt(span)!r} does not occur verbatim in {what}"
        + (" (it differs only in case or whitespace)" if near else ""),
        "copy the span exactly from the document's body (spans are exact: case, "
        "punctuation, Markdown and whitespace included)",
    )


def _loose(text: str) -> str:
    """``text`` case-folded with its whitespace runs as one space, for the hint."""
    return " ".join(text.casefold().split())


def _target(
    corpus: CorpusIndex,
    case: GoldenCase,
    kind: str,
    value: str,
    pointer: str,
    relevant: bool = True,
) -> Finding | None:
    """``missing-target`` when ``value`` names nothing; ``out-of-scope`` when it names a
    document the case's lookups cannot see (another ``kb_scope``, or none) and the case
    needs it (an expectation, or a judgment with a grade above 0)."""
    missing = _missing(corpus, kind, value, pointer)
    if missing is not None or not relevant or case.kb_scope is None:
        return missing
    source = corpus.source_of(kind, value)
    assert source is not None  # not missing
    scope = corpus.scopes.get(source)
    if scope == case.kb_scope:
        return None
    where = f"in kb_scope {scope!r}" if scope is not None else "in no kb_scope"
    return Finding(
        "error",
        "out-of-scope",
        pointer,
        f"{_KIND_NAMES[kind]} {value!r} is {where}, and the case looks up inside kb_scope "
        f"{case.kb_scope!r} only, so it can never be returned",
        f"expect a document of kb_scope {case.kb_scope!r}, or give the case the kbScope of "
        "the document",
    )


def check_labels(cases: Sequence[GoldenCase], corpus: CorpusIndex) -> list[Finding]:
    """Targets, spans and breadcrumbs of ``cases`` (``/cases/N`` in file order) against
    ``corpus`` (module docstring)."""
    found: list[Finding] = []
    breadcrumbs = sorted(corpus.breadcrumbs)
    for index, case in enumerate(cases):
        at = f"/cases/{index}"
        for j, judgment in enumerate(case.judgments):
            where = f"{at}/judgments/{j}"
            kind, target = judgment.kind, judgment.target
            bad = _target(corpus, case, kind, target, f"{where}/{kind}", judgment.grade > 0)
            if bad is not None:
                found.append(bad)
                if bad.code == "missing-target":
                    continue
            for k, span in enumerate(judgment.spans):
                bad = _span_finding(corpus, kind, target, span, f"{where}/spans/{k}")
                if bad is not None:
                    found.append(bad)
        lists = (
            ("expectedSources", "source", case.expected_sources),
            ("expectedDocIds", "docId", case.expected_doc_ids),
            ("expectedContextSources", "source", case.expected_context_sources),
        )
        for name, kind, values in lists:
            for k, value in enumerate(values):
                bad = _target(corpus, case, kind, value, f"{at}/{name}/{k}")
                if bad is not None:
                    found.append(bad)
        if case.expected_rerank_top_source is not None:
            value = case.expected_rerank_top_source
            bad = _target(corpus, case, "source", value, f"{at}/expectedRerankTopSource")
            if bad is not None:
                found.append(bad)
        for k, crumb in enumerate(case.expected_breadcrumbs):
            if not any(breadcrumb_covers(crumb, have) for have in breadcrumbs):
                close = difflib.get_close_matches(crumb, breadcrumbs, n=1, cutoff=0.6)
                hint = f"did you mean {close[0]!r}? " if close else ""
                found.append(
                    Finding(
                        "error",
                        "breadcrumb",
                        f"{at}/expectedBreadcrumbs/{k}",
                        f"breadcrumb {crumb!r} is not a prefix of any seed document's breadcrumb",
                        f"{hint}use whole leading segments of a document's `breadcrumb` "
                        "(`Database > MySQL` covers `Database > MySQL > Connection Pool`)",
                    )
                )
    return found


# ---------------------------------------------------------------- privacy


@dataclass(frozen=True, slots=True)
class PrivacyRule:
    """A pattern that must not occur in a golden case, with what it is and the fix."""

    code: str  # "secret", "absolute-path" or "endpoint"
    name: str
    pattern: re.Pattern[str]
    fix: str
    #: lower-case literals one of which every match holds: a text without any of them
    #: is not searched (empty: always searched)
    needs: tuple[str, ...] = ()

    def could_match(self, folded: str) -> bool:
        """Whether a text whose lower-case form is ``folded`` can hold a match."""
        return not self.needs or any(literal in folded for literal in self.needs)


_SECRET_FIX = (
    "remove it: golden cases are committed and quoted in reports; if the credential is "
    "real, revoke it"
)
_PATH_FIX = "remove it or write a relative path or a placeholder such as <home>/..."
_ENDPOINT_FIX = "remove it or write a placeholder such as <service-url> or <host>:<port>"

#: Each rule's name says what matched; the matched text is never repeated. Tokens
#: must look like tokens (``sk-`` and ``Bearer`` ones hold a digit, so ``Bearer
#: authentication`` passes) and a ``host:port`` host is written in lower case, as
#: hostnames are (``ERR:4031`` passes).
PRIVACY_RULES: tuple[PrivacyRule, ...] = (
    PrivacyRule(
        "secret",
        "a private key block",
        re.compile(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----"),
        _SECRET_FIX,
        ("-----begin",),
    ),
    PrivacyRule(
        "secret",
        "an API key (sk-...)",
        re.compile(r"(?<![A-Za-z0-9])sk-(?=[A-Za-z0-9_-]*\d)[A-Za-z0-9_-]{16,}"),
        _SECRET_FIX,
        ("sk-",),
    ),
    PrivacyRule(
        "secret",
        "an AWS access key id (AKIA...)",
        re.compile(r"(?<![A-Z0-9])(?:AKIA|ASIA)[0-9A-Z]{16}(?![0-9A-Z])"),
        _SECRET_FIX,
        ("akia", "asia"),
    ),
    PrivacyRule(
        "secret",
        "a GitHub token (ghp_...)",
        re.compile(r"(?<![A-Za-z0-9])(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})"),
        _SECRET_FIX,
        ("gh",),
    ),
    PrivacyRule(
        "secret",
        "a Slack token (xox...)",
        re.compile(r"(?<![A-Za-z0-9])xox[abprs]-[A-Za-z0-9-]{10,}"),
        _SECRET_FIX,
        ("xox",),
    ),
    PrivacyRule(
        "secret",
        "a JSON Web Token",
        re.compile(r"(?<![A-Za-z0-9])eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\."),
        _SECRET_FIX,
        ("eyj",),
    ),
    PrivacyRule(
        "secret",
        "a bearer token (Bearer ...)",
        re.compile(r"\bBearer\s+(?=[A-Za-z0-9._~+/-]*\d)[A-Za-z0-9._~+/-]{16,}", re.IGNORECASE),
        _SECRET_FIX,
        ("bearer",),
    ),
    PrivacyRule(
        "secret",
        "a credential assignment (password=...)",
        re.compile(
            r"\b(?:password|passwd|pwd|secret|api[_-]?key|access[_-]?key|auth[_-]?token|"
            r"access[_-]?token|client[_-]?secret)\s*[=:]\s*[^\s,;'\"<]",
            re.IGNORECASE,
        ),
        _SECRET_FIX,
        ("=", ":"),
    ),
    PrivacyRule(
        "secret",
        "credentials in a URL (user:password@)",
        re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^/\s:@]+:[^/\s@]+@"),
        _SECRET_FIX,
        ("://",),
    ),
    PrivacyRule(
        "absolute-path",
        "an absolute path (/home/..., /Users/...)",
        re.compile(r"(?<![\w.~/:-])/(?:home|Users|root|Volumes)/"),
        _PATH_FIX,
        ("/home/", "/users/", "/root/", "/volumes/"),
    ),
    PrivacyRule(
        "absolute-path",
        "a Windows path (C:\\...)",
        re.compile(r"(?<![A-Za-z0-9])[A-Za-z]:\\|(?<![A-Za-z0-9:/])[A-Za-z]:/(?!/)|\\\\[\w.-]+\\"),
        _PATH_FIX,
        (":\\", ":/", "\\\\"),
    ),
    PrivacyRule(
        "absolute-path",
        "a home-relative path (~/...)",
        re.compile(r"(?<![\w/])~[A-Za-z0-9_.-]*/"),
        _PATH_FIX,
        ("~",),
    ),
    PrivacyRule(
        "endpoint",
        "a URL (scheme://...)",
        re.compile(r"(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]*://"),
        _ENDPOINT_FIX,
        ("://",),
    ),
    PrivacyRule(
        "endpoint",
        "a host:port address",
        re.compile(
            r"(?<![\w.:/@-])"
            r"(?:localhost|(?:\d{1,3}\.){3}\d{1,3}|\[[0-9A-Fa-f:]+\]|"
            r"[a-z0-9-]*[a-z][a-z0-9-]*(?:\.[a-z0-9-]+)*)"
            r":(?:6553[0-5]|655[0-2]\d|65[0-4]\d\d|6[0-4]\d{3}|[1-5]\d{4}|[1-9]\d{1,3})"
            r"(?![\w:.]|-\w)"
        ),
        _ENDPOINT_FIX,
        (":",),
    ),
)

#: one of the literals some rule needs (``PrivacyRule.needs``): a text without any is
#: searched by no rule (None when a rule needs none: every text is searched)
_ANY_LITERAL = (
    None
    if any(not rule.needs for rule in PRIVACY_RULES)
    else re.compile("|".join(re.escape(n) for rule in PRIVACY_RULES for n in rule.needs))
)

_DIGIT = re.compile(r"\d")
_SEPARATORS = re.compile(r"[_-]")

#: a run of token characters long enough to be a random key
_TOKEN = re.compile(r"[A-Za-z0-9+/=_-]{24,}")
_RANDOM_FIX = _SECRET_FIX + "; a long random-looking identifier counts as a secret"


def looks_random(token: str) -> bool:
    """True for a token that looks like a random key: 24+ characters that mix upper
    case, lower case and digits, with a Shannon entropy of at least 4 bits per
    character (random base62/base64 text has about 4.2 at 24 characters and more
    beyond; identifiers such as ``SQLTransientConnectionException`` have no digit,
    ``db-err-4031-order-repository`` no capital, and hex digests at most 4 bits), and
    a run of 16 or more of them between ``_`` and ``-`` (words joined into an id, such
    as an imported ``how_is_BERT_pre-trained--bed61e8933ff``, have shorter runs)."""
    if len(token) < 24 or max(map(len, _SEPARATORS.split(token))) < 16:
        return False
    # upper case, lower case and a digit (token characters are ASCII: str methods in C)
    if token == token.lower() or token == token.upper() or _DIGIT.search(token) is None:
        return False
    counts = Counter(token)
    entropy = -sum(n / len(token) * math.log2(n / len(token)) for n in counts.values())
    return entropy >= 4.0


def _strings(value: Any, pointer: str) -> Iterator[tuple[str, str]]:
    """(pointer, string) of every string value in a parsed JSON document."""
    if isinstance(value, str):
        yield pointer, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _strings(item, f"{pointer}/{_escape(str(key))}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _strings(item, f"{pointer}/{index}")


def _texts(value: Any, into: set[str]) -> set[str]:
    """Every distinct string value of a parsed JSON document (no pointers built)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            into.add(item)
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return into


#: values that quote the corpus: an answer span, an expected keyword
_QUOTES = re.compile(r"/judgments/\d+/spans/\d+$|/expectedKeywords/\d+$")


def quote_candidates(document: Any) -> set[str]:
    """The paths and endpoints that answer spans and expected keywords of ``document``
    hold: what ``CorpusIndex.build(quotes=...)`` looks for in the corpus."""
    return {
        match.group()
        for pointer, text in _strings(document, "")
        if _QUOTES.search(pointer)
        for rule in PRIVACY_RULES
        if rule.code != "secret"
        for match in rule.pattern.finditer(text)
    }


def check_privacy(
    document: Any, corpus: CorpusIndex | None = None, *, trust_quotes: bool = False
) -> list[Finding]:
    """Secrets, absolute paths and endpoints in any string of ``document`` (a parsed
    cases file): one finding per value and rule, naming the rule and the character
    offset of the first match, never the matched text.

    A path or an endpoint in an answer span or an expected keyword is allowed when
    the matched text occurs verbatim in a document of ``corpus`` (found while it was
    built, ``quote_candidates``, or in a body it kept): the case then quotes what the
    corpus already holds (a runbook's ``--bootstrap-server kafka:9092``), and a span
    must be verbatim. A secret is refused wherever it is. ``trust_quotes`` (no corpus
    to look in: a score without a seed corpus) allows every path and endpoint in a span
    or a keyword, since the quote cannot be looked up.
    """

    def quoted(pointer: str, text: str) -> bool:
        if _QUOTES.search(pointer) is None:
            return False
        if corpus is None:
            return trust_quotes
        return text in corpus.quoted or any(text in body for body in corpus.bodies.values())

    found: list[Finding] = []
    # each distinct text is searched once (ids, tags, categories repeat); the pointers
    # are walked only when some text holds something
    scanned = {text: _scan(text) for text in _texts(document, set())}
    if not any(rule_hits or random_at is not None for rule_hits, random_at in scanned.values()):
        return found
    for pointer, text in _strings(document, ""):
        rule_hits, random_at = scanned[text]
        secret = False
        for rule, matches in rule_hits:
            match = next(
                (m for m in matches if rule.code == "secret" or not quoted(pointer, m.group())),
                None,
            )
            if match is None:
                continue
            secret = secret or rule.code == "secret"
            found.append(
                Finding(
                    "error",
                    rule.code,
                    pointer,
                    f"holds {rule.name} at character {match.start()}",
                    rule.fix,
                )
            )
        if not secret and random_at is not None:
            found.append(
                Finding(
                    "error",
                    "secret",
                    pointer,
                    f"holds a long random-looking token at character {random_at} "
                    "(an API key or token?)",
                    _RANDOM_FIX,
                )
            )
    return found


def _scan(text: str) -> tuple[list[tuple[PrivacyRule, list[re.Match[str]]]], int | None]:
    """Every rule's matches in ``text`` (the rules that match), and where its first
    random-looking token starts (None: none). A rule is searched only when ``text``
    holds one of its literals (``PrivacyRule.needs``)."""
    folded = text.lower()
    hits = (
        [
            (rule, matches)
            for rule in PRIVACY_RULES
            if rule.could_match(folded) and (matches := list(rule.pattern.finditer(text)))
        ]
        if _ANY_LITERAL is None or _ANY_LITERAL.search(folded)
        else []
    )
    token = (
        next((m for m in _TOKEN.finditer(text) if looks_random(m.group())), None)
        if len(text) >= 24
        else None
    )
    return hits, None if token is None else token.start()


# ---------------------------------------------------------------- coverage


def check_no_answer_coverage(
    cases: Sequence[GoldenCase], severity: Severity = "error"
) -> list[Finding]:
    """A finding per language with answerable cases and no no-answer case: ``severity``
    (an error, or a warning when the project opts out: ``scoring.noAnswerCoverage:
    warning``) when another language has no-answer cases; one warning for the whole
    set when no language has any."""
    answerable: Counter[str] = Counter()
    no_answer: set[str] = set()
    for case in cases:
        if case.no_answer:
            no_answer.add(case.language)
        else:
            answerable[case.language] += 1
    if not no_answer:
        if not answerable:
            return []
        return [
            Finding(
                "warning",
                "no-answer-coverage",
                "/cases",
                "no case is a no-answer case, so no-answer false positives are not measured",
                'add cases with "noAnswer": true and questions the seed corpus does not '
                "answer, one or more per language",
            )
        ]
    return [
        Finding(
            severity,
            "no-answer-coverage",
            "/cases",
            f"language {language!r} has {count} answerable case(s) and no no-answer case, "
            "so no-answer false positives are not measured in it",
            f'add a case with "language": "{language}", "noAnswer": true and a question '
            "the seed corpus does not answer"
            + (
                " (or set `scoring.noAnswerCoverage: warning` in ragsnap.yaml when the set "
                "cannot have one)"
                if severity == "error"
                else ""
            ),
        )
        for language, count in sorted(answerable.items())
        if language not in no_answer
    ]


def check_cases(
    document: Any,
    cases: Sequence[GoldenCase],
    corpus: CorpusIndex,
    no_answer_coverage: Severity = "error",
) -> list[Finding]:
    """Every check of the module docstring: errors first, then warnings; each by case in
    file order, then by pointer (``/cases/2/...`` before ``/cases/10/...``).
    ``no_answer_coverage``: the severity of ``no-answer-coverage``."""
    found = [
        *check_labels(cases, corpus),
        *check_privacy(document, corpus),
        *check_no_answer_coverage(cases, no_answer_coverage),
    ]
    return sorted(found, key=lambda f: (f.severity != "error", _pointer_key(f.pointer)))
