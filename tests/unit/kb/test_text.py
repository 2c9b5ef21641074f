"""Normalisation and tokenisation (ragsnap.kb.text)."""

from __future__ import annotations

import concurrent.futures
import threading

import pytest

from ragsnap.errors import UsageError
from ragsnap.kb.text import STOP_WORDS, Tokenizer, get_tokenizer, is_identifier, normalize


def test_normalize_is_nfkc_and_lowercase() -> None:
    assert normalize("ＭａｘＰｏｏｌＳｉｚｅ") == "maxpoolsize"
    assert normalize("ERR－４０３１") == "err-4031"
    assert normalize("Kafka") == "kafka"
    assert normalize("Ｒｅｄｉｓ 缓存") == "redis 缓存"


def test_full_width_text_tokenises_like_ascii() -> None:
    tok = Tokenizer()
    expected = ["maxpoolsize", "err"]
    assert tok.tokens("ＭａｘＰｏｏｌＳｉｚｅ ＥＲＲ") == tok.tokens("maxPoolSize err") == expected


def test_stop_words_are_dropped() -> None:
    tok = Tokenizer()
    assert tok.tokens("The pool is full and it should be drained") == ["pool", "full", "drained"]
    assert tok.tokens("The AND Of") == []
    assert {"the", "and", "of"} <= STOP_WORDS
    assert tok.words("What is the pool") == [(False, "pool")]


def test_chinese_runs_become_overlapping_bigrams() -> None:
    tok = Tokenizer("bigram")
    assert tok.name == "bigram-v1"
    assert tok.tokens("缓存雪崩") == ["缓存", "存雪", "雪崩"]
    assert tok.tokens("缓存") == ["缓存"]
    assert tok.tokens("雪") == ["雪"]
    assert tok.tokens("x 雪 y") == ["x", "雪", "y"]
    # punctuation ends a run: no bigram crosses it
    assert tok.tokens("缓存，雪崩") == ["缓存", "雪崩"]


def test_mixed_latin_and_cjk_split_into_word_and_bigrams() -> None:
    tok = get_tokenizer()
    assert tok.tokens("Redis缓存雪崩") == ["redis", "缓存", "存雪", "雪崩"]
    assert tok.tokens("Redis缓存雪崩 ERR-4031") == ["redis", "缓存", "存雪", "雪崩", "err", "4031"]
    assert tok.words("Redis缓存雪崩") == [(False, "redis"), (True, "缓存雪崩")]


def test_get_tokenizer_is_shared() -> None:
    assert get_tokenizer("bigram") is get_tokenizer("bigram")


def test_jieba_segmenter_produces_words() -> None:
    pytest.importorskip("jieba")
    tok = Tokenizer("jieba")
    assert tok.name == "jieba-v1"
    tokens = tok.tokens("Redis缓存雪崩的预防")
    assert tokens[0] == "redis"
    assert "缓存" in tokens
    assert "雪崩" in tokens
    assert "存雪" not in tokens
    assert all(t.strip() == t and t for t in tokens)


@pytest.mark.parametrize("name", ["spacy", "", "Bigram"])
def test_unknown_segmenter_is_a_usage_error(name: str) -> None:
    with pytest.raises(UsageError) as info:
        Tokenizer(name)
    assert repr(name) in str(info.value)
    assert "bigram" in str(info.value) and "jieba" in str(info.value)
    assert info.value.exit_code == 2


@pytest.mark.parametrize(
    "token",
    ["maxPoolSize", "ERR-4031", "runbook_url", "max.poll.records", "HikariCP", "http2", "gc:pause"],
)
def test_identifiers(token: str) -> None:
    assert is_identifier(token)


@pytest.mark.parametrize("token", ["pool", "Kafka", "redis", "ab", "A1", "缓存", "Connection"])
def test_plain_words_are_not_identifiers(token: str) -> None:
    assert not is_identifier(token)


def test_the_english_stemmer_conflates_inflections() -> None:
    plain, stemmed = Tokenizer(), Tokenizer(stemmer="english")
    text = "Connections pooled; the pool connects 连接池"
    assert plain.tokens(text) == ["connections", "pooled", "pool", "connects", "连接", "接池"]
    assert stemmed.tokens(text) == ["connect", "pool", "pool", "connect", "连接", "接池"]
    assert stemmed.words(text) == plain.words(text)  # the hashing embedder's input: unstemmed
    assert (plain.name, stemmed.name) == ("bigram-v1", "bigram-v1+snowball-english")
    assert get_tokenizer("bigram", "english") is get_tokenizer("bigram", "english")


def test_stop_words_can_be_kept() -> None:
    keep = Tokenizer(stop_words=False)
    assert keep.tokens("the pool of the service") == ["the", "pool", "of", "the", "service"]
    assert keep.name == "bigram-v1+stop-none"


def test_unknown_stemmer_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="unknown stemmer 'klingon'"):
        Tokenizer(stemmer="klingon")


def test_every_thread_stems_with_its_own_stemmer() -> None:
    """PyStemmer's stemmers are not thread-safe: the lookups ``ragsnap serve`` runs in
    threads each use their own, and stem exactly as one thread does."""
    tokenizer = Tokenizer("bigram", "english")
    texts = [f"connections pooling retries throttled leaks {i} generalizations" for i in range(200)]
    expected = [tokenizer.tokens(t) for t in texts]
    stemmers: set[int] = set()
    barrier = threading.Barrier(4)

    def work() -> list[list[str]]:
        barrier.wait()
        stem = tokenizer._stem()
        assert stem is not None
        stemmers.add(id(stem))
        return [tokenizer.tokens(t) for _ in range(5) for t in texts]

    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        results = [f.result() for f in [pool.submit(work) for _ in range(4)]]
    assert all(r == expected * 5 for r in results)
    assert len(stemmers) == 4  # one a thread, none shared
    assert Tokenizer("bigram")._stem() is None


@pytest.mark.parametrize("stemmer", [None, "english"])
def test_ascii_text_splits_into_the_words_the_unicode_pattern_finds(stemmer: str | None) -> None:
    """ASCII text takes a shorter path (one translation and a split, no regular
    expression): its tokens are those the general path gives, for every printable and
    control character, underscores, digits and joiners; non-ASCII text keeps the
    general path."""
    import random
    import string

    from ragsnap.kb import text

    tokenizer = text.Tokenizer("bigram", stemmer)

    def general(value: str) -> list[str]:
        stem, out = tokenizer._stem(), []
        for cjk, word in text._RUNS.findall(text.normalize(value)):
            if cjk:
                out.extend(text._bigrams(cjk))
            elif word not in text.STOP_WORDS:
                out.append(word if stem is None else stem(word))
        return out

    rng = random.Random(9)
    alphabet = string.printable + "\x00\x1f\x7f_"
    words = ["The", "RUNNING", "pool_size", "maxPoolSize", "ERR-4031", "a", "x9", "über", "缓存"]
    for _ in range(3000):
        noise = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 60)))
        phrase = " ".join(rng.choice(words) for _ in range(rng.randint(0, 8)))
        for value in (noise, phrase):
            assert tokenizer.tokens(value) == general(value), value
    assert tokenizer.tokens("Pool_size, the MAX-pool!") == general("Pool_size, the MAX-pool!")
    assert tokenizer.tokens("Pool_size, the MAX-pool!")[0] == "pool"
