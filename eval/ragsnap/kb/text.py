"""Text normalisation and tokenisation shared by lexical search, the hashing
embedder, L0 hints and the reranker.

One tokeniser serves the index and the query, so both sides always agree::

    text ─NFKC, lower─▶ runs of letters/digits ─┬─ Latin/other run ─▶ one token (stop words dropped)
                                                └─ CJK run ─▶ segmenter ─▶ tokens

Chinese (and Japanese / Korean) text has no spaces, so a CJK run is cut by a
*segmenter*: ``bigram`` (overlapping character bigrams, a lone character as a
unigram; dependency-free, the default) or ``jieba`` (dictionary word
segmentation in search mode, extra ``zh``). ``benchmarks/README.md`` records
how the two retrieve on the GoodBuddy bilingual set. The tokens are stored
space-separated in SQLite FTS5, whose own ``unicode61`` tokeniser then only
splits on those spaces; nothing depends on SQLite extensions.

The *analyzer* of Latin runs is configurable (``kb.analyzer`` in ragsnap.yaml):
``stemmer`` (a Snowball language through PyStemmer, ``english`` by default in
ragsnap.yaml: ``connections`` and ``connection`` become ``connect``; or
``none``; a ``Tokenizer`` made in code has none unless asked) and ``stopWords``
(``english``, the default, or ``none``). Chinese runs keep their segmenter. Both are part of the
tokeniser's name, which the knowledge base records: an index built with one
analyzer is refused by another until ``ragsnap seed --reindex``.
"""

from __future__ import annotations

import functools
import re
import threading
import unicodedata
from collections.abc import Callable

from ..errors import MissingDependency, UsageError

__all__ = [
    "SEGMENTERS",
    "STEMMERS",
    "STOP_WORDS",
    "Tokenizer",
    "get_tokenizer",
    "has_cjk",
    "is_identifier",
    "normalize",
]

_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"
_RUNS = re.compile(rf"([{_CJK}]+)|([^\W_{_CJK}]+)")
_ANY_CJK = re.compile(rf"[{_CJK}]")
#: ASCII text's word runs (``_RUNS``'s second group: letters and digits) by one
#: translation and a split, about half the time of the regular expression
_ASCII_SPACES = str.maketrans({c: " " for c in map(chr, range(128)) if not c.isalnum()})


def has_cjk(text: str) -> bool:
    """Whether ``text`` holds Chinese, Japanese or Korean characters."""
    return _ANY_CJK.search(text) is not None


#: English function words that carry no retrieval signal (a short, fixed list:
#: changing it changes every index, so it is versioned with the tokeniser).
_STOP_WORDS = """a about after all also an and any are as at be because been before being between
    both but by can could did do does doing during each for from further had has have
    having he her here hers him his how i if in into is it its itself just me more most
    my no nor not now of off on once only or other our ours out over own same she should
    so some such than that the their theirs them then there these they this those
    through to too under until up very was we were what when where which while who whom
    why will with would you your yours"""
STOP_WORDS = frozenset(_STOP_WORDS.split())

SEGMENTERS = ("bigram", "jieba")
TOKENIZER_VERSION = "1"
#: Snowball languages of PyStemmer that ``kb.analyzer.stemmer`` accepts
STEMMERS = (
    "arabic", "armenian", "basque", "catalan", "danish", "dutch", "english", "finnish",
    "french", "german", "greek", "hindi", "hungarian", "indonesian", "irish", "italian",
    "lithuanian", "nepali", "norwegian", "porter", "portuguese", "romanian", "russian",
    "serbian", "spanish", "swedish", "tamil", "turkish", "yiddish",
)  # fmt: skip


def normalize(text: str) -> str:
    """NFKC-normalise (full-width forms become ASCII) and lower-case."""
    if text.isascii():
        return text.lower()
    return unicodedata.normalize("NFKC", text).lower()


def _bigrams(run: str) -> list[str]:
    if len(run) == 1:
        return [run]
    return [run[i : i + 2] for i in range(len(run) - 1)]


@functools.cache
def _jieba_cut() -> Callable[[str], list[str]]:
    try:
        import jieba
    except ImportError:
        raise MissingDependency("the jieba Chinese segmenter", "zh") from None
    jieba.setLogLevel(60)  # silence "Building prefix dict..." on stderr
    cut: Callable[[str], list[str]] = jieba.lcut_for_search
    return cut


def _jieba(run: str) -> list[str]:
    return [w for w in _jieba_cut()(run) if w.strip()]


def _stemmer(language: str) -> Callable[[str], str]:
    """A new PyStemmer Snowball stemmer of ``language``: one word in, its stem out.
    PyStemmer's stemmers are not thread-safe: a ``Tokenizer`` keeps one a thread."""
    try:
        import Stemmer
    except ImportError:  # a core dependency: only a broken install lands here
        raise MissingDependency("the PyStemmer Snowball stemmer", "") from None
    stem: Callable[[str], str] = Stemmer.Stemmer(language).stemWord
    return stem


class Tokenizer:
    """Turns text into index/query tokens with one CJK segmenter and one analyzer.

    ``name`` (``bigram-v1``, ``jieba-v1``, with ``+snowball-english`` when
    stemming and ``+stop-none`` without stop words) is part of a knowledge
    base's fingerprint: an index built with one tokeniser cannot be queried
    with another.
    """

    def __init__(
        self, segmenter: str = "bigram", stemmer: str | None = None, stop_words: bool = True
    ):
        if segmenter not in SEGMENTERS:
            raise UsageError(f"unknown segmenter {segmenter!r}; use one of {', '.join(SEGMENTERS)}")
        if stemmer is not None and stemmer not in STEMMERS:
            raise UsageError(
                f"unknown stemmer {stemmer!r}; use none or a Snowball language such as english"
            )
        self.segmenter = segmenter
        self.stemmer = stemmer
        self.stop_words = stop_words
        self.name = f"{segmenter}-v{TOKENIZER_VERSION}"
        if stemmer is not None:
            self.name += f"+snowball-{stemmer}"
        if not stop_words:
            self.name += "+stop-none"
        self._segment = _bigrams if segmenter == "bigram" else _jieba
        self._stops = STOP_WORDS if stop_words else frozenset()
        self._local = threading.local()  # this thread's stemmer (``_stem``)
        if stemmer is not None:
            self._local.stem = _stemmer(stemmer)  # fail now if PyStemmer is missing
        if segmenter == "jieba":
            _jieba_cut()  # fail now, not in the middle of an import

    def tokens(self, text: str) -> list[str]:
        """Index/query tokens of ``text`` in order, stop words removed, stemmed."""
        stops, stem = self._stops, self._stem()
        if text.isascii():  # no CJK run: the words alone
            words = text.lower().translate(_ASCII_SPACES).split()
            if stem is None:
                return [word for word in words if word not in stops]
            return [stem(word) for word in words if word not in stops]
        out: list[str] = []
        for cjk, word in _RUNS.findall(normalize(text)):
            if cjk:
                out.extend(self._segment(cjk))
            elif word not in stops:
                out.append(word if stem is None else stem(word))
        return out

    def _stem(self) -> Callable[[str], str] | None:
        """This thread's stemmer (made on the thread's first use), or None."""
        if self.stemmer is None:
            return None
        stem: Callable[[str], str] | None = getattr(self._local, "stem", None)
        if stem is None:
            stem = self._local.stem = _stemmer(self.stemmer)
        return stem

    def words(self, text: str) -> list[tuple[bool, str]]:
        """The raw runs of ``text``: ``(is_cjk, run)``, stop words removed, unstemmed
        (the hashing embedder's input: its character n-grams see inflections)."""
        return [
            (True, cjk) if cjk else (False, word)
            for cjk, word in _RUNS.findall(normalize(text))
            if cjk or word not in STOP_WORDS
        ]


@functools.cache
def get_tokenizer(
    segmenter: str = "bigram", stemmer: str | None = None, stop_words: bool = True
) -> Tokenizer:
    """The shared ``Tokenizer`` for ``segmenter`` and the analyzer."""
    return Tokenizer(segmenter, stemmer, stop_words)


_IDENTIFIER = re.compile(r"[A-Za-z]+[A-Z0-9_.:-][A-Za-z0-9_.:-]*|[A-Za-z]*\d[\w.-]*")


def is_identifier(token: str) -> bool:
    """Whether a raw query token looks like code: ``maxPoolSize``, ``ERR-4031``,
    ``runbook_url``, ``max.poll.records`` (mixed case, digits or joiners)."""
    return len(token) >= 3 and _IDENTIFIER.fullmatch(token) is not None
