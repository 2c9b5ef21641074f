"""The pure parts of seed import (ragsnap.kb.seeding): plan, index hash, compatibility."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from ragsnap.errors import BackendError
from ragsnap.kb.backends import DocumentInfo
from ragsnap.kb.corpus import ChunkSettings, SeedDocument, parse_seed_doc
from ragsnap.kb.embedders import Fingerprint
from ragsnap.kb.numeric import VECTOR_ENCODING
from ragsnap.kb.seeding import (
    SeedPlan,
    check_compatible,
    corpus_revision,
    document_digest,
    index_hash,
    plan_seed,
)

SETTINGS = ChunkSettings()


def seed_doc(source: str, content_hash: str = "hash-1") -> SeedDocument:
    return SeedDocument(
        path=f"seed-docs/{source}.md", source=source, body="text", content_hash=content_hash
    )


def stored(doc: SeedDocument, settings: ChunkSettings = SETTINGS) -> DocumentInfo:
    return DocumentInfo(source=doc.source, index_hash=index_hash(doc, settings), chunk_count=1)


def test_plan_classifies_every_source() -> None:
    same = seed_doc("same")
    changed = seed_doc("changed", "new-hash")
    new = seed_doc("new")
    have = {
        "same": stored(same),
        "changed": stored(seed_doc("changed", "old-hash")),
        "zz-gone": stored(seed_doc("zz-gone")),
        "gone": stored(seed_doc("gone")),
    }
    plan = plan_seed([new, changed, same], have, SETTINGS)
    assert plan == SeedPlan(
        added=("new",), updated=("changed",), unchanged=("same",), removed=("gone", "zz-gone")
    )
    assert plan.changes
    assert plan.summary() == "1 added, 1 updated, 1 unchanged, 2 removed"


def test_plan_keeps_document_order() -> None:
    docs = [seed_doc("c"), seed_doc("a"), seed_doc("b")]
    assert plan_seed(docs, {}, SETTINGS).added == ("c", "a", "b")


def test_nothing_changed_means_no_changes() -> None:
    docs = [seed_doc("a"), seed_doc("b")]
    plan = plan_seed(docs, {d.source: stored(d) for d in docs}, SETTINGS)
    assert plan == SeedPlan((), (), ("a", "b"), ())
    assert not plan.changes


def test_empty_everything() -> None:
    plan = plan_seed([], {}, SETTINGS)
    assert plan == SeedPlan((), (), (), ())
    assert not plan.changes


@pytest.mark.parametrize(
    "plan",
    [
        SeedPlan(("a",), (), (), ()),
        SeedPlan((), ("a",), (), ()),
        SeedPlan((), (), (), ("a",)),
    ],
)
def test_any_add_update_or_remove_is_a_change(plan: SeedPlan) -> None:
    assert plan.changes


def test_only_removals() -> None:
    plan = plan_seed([], {"x": stored(seed_doc("x"))}, SETTINGS)
    assert plan == SeedPlan((), (), (), ("x",))
    assert plan.changes


def test_reindex_updates_every_stored_document() -> None:
    docs = [seed_doc("a"), seed_doc("b")]
    have = {"a": stored(docs[0])}
    plan = plan_seed(docs, have, SETTINGS, reindex=True)
    assert plan == SeedPlan(added=("b",), updated=("a",), unchanged=(), removed=())


def test_new_chunk_settings_update_everything() -> None:
    docs = [seed_doc("a")]
    have = {"a": stored(docs[0], ChunkSettings(max_chars=500))}
    assert plan_seed(docs, have, SETTINGS).updated == ("a",)
    assert plan_seed(docs, have, ChunkSettings(max_chars=500)).unchanged == ("a",)


def test_index_hash_follows_file_bytes_and_settings() -> None:
    path = Path("seed-docs/a.md")
    one = parse_seed_doc(path, b"---\nsource: a\n---\nbody\n")
    again = parse_seed_doc(path, b"---\nsource: a\n---\nbody\n")
    body_edit = parse_seed_doc(path, b"---\nsource: a\n---\nbody!\n")
    header_edit = parse_seed_doc(path, b"---\nsource: a\ntitle: T\n---\nbody\n")
    h = index_hash(one, SETTINGS)
    assert len(h) == 64 and int(h, 16) >= 0
    assert index_hash(again, SETTINGS) == h
    assert index_hash(body_edit, SETTINGS) != h
    assert index_hash(header_edit, SETTINGS) != h
    assert index_hash(one, ChunkSettings(max_chars=SETTINGS.max_chars + 1)) != h
    assert index_hash(one, ChunkSettings(overlap_chars=0)) != h
    assert index_hash(one, ChunkSettings(heading_level=3)) != h
    # only the file's hash counts, not the parsed fields
    assert index_hash(replace(one, title="other", path="elsewhere.md"), SETTINGS) == h


FP = Fingerprint("hashing", "ragsnap-hash", "1", 256)
OTHER = Fingerprint("sentence-transformers", "all-MiniLM-L6-v2", "abc", 384)


def meta(fp: Fingerprint = FP, tokenizer: str | None = "bigram-v1") -> dict[str, str]:
    out = {
        "embedder": json.dumps(fp.to_json(), sort_keys=True),
        "chunking": "x",
        "vectorEncoding": VECTOR_ENCODING,
    }
    if tokenizer is not None:
        out["tokenizer"] = tokenizer
    return out


@pytest.mark.parametrize("encoding", [None, "unit-int8-v0"])
def test_a_store_with_other_vector_encoding_is_refused(encoding: str | None) -> None:
    """A store from before exact vector scores (no vectorEncoding) must be rebuilt."""
    stored = meta()
    if encoding is None:
        del stored["vectorEncoding"]
    else:
        stored["vectorEncoding"] = encoding
    with pytest.raises(BackendError) as info:
        check_compatible(stored, FP, "bigram-v1", "the kb", fix="rebuild it")
    message = str(info.value)
    assert message.startswith("the kb holds vectors encoded as ")
    assert VECTOR_ENCODING in message
    assert "ragsnap seed --reindex" in message
    assert info.value.exit_code == 2


def test_compatible_store_passes() -> None:
    check_compatible(meta(), FP, "bigram-v1", "the kb", fix="fix it")
    check_compatible({}, OTHER, "jieba-v1", "the kb", fix="fix it")
    check_compatible(meta(tokenizer=None), FP, "jieba-v1", "the kb", fix="fix it")


@pytest.mark.parametrize(
    "current",
    [OTHER, replace(FP, revision="2"), replace(FP, dimension=128), replace(FP, model="m2")],
)
def test_other_embedder_is_refused(current: Fingerprint) -> None:
    with pytest.raises(BackendError) as info:
        check_compatible(meta(), current, "bigram-v1", "the knowledge base", fix="rebuild it")
    message = str(info.value)
    assert str(FP) in message
    assert str(current) in message
    assert message.startswith("the knowledge base ")
    assert message.endswith("; rebuild it")
    assert info.value.exit_code == 2


def test_other_tokenizer_is_refused() -> None:
    with pytest.raises(BackendError) as info:
        check_compatible(meta(), FP, "jieba-v1", "the kb", fix="rebuild it")
    message = str(info.value)
    assert "bigram-v1" in message and "jieba-v1" in message
    assert message.endswith("; rebuild it")


RAW = b"---\nsource: pool\ntitle: Pool\ntags: [a, b]\n---\n\n## Size\n\nThe pool holds 20.\n"


def test_a_documents_digest_ignores_line_endings_and_header_layout() -> None:
    """What the fixture manifest records is the same on a Windows checkout (CRLF) and on
    a reformatted header with the same values; the index hash (the bytes) is not."""
    lf = parse_seed_doc(Path("pool.md"), RAW)
    crlf = parse_seed_doc(Path("pool.md"), RAW.replace(b"\n", b"\r\n"))
    spaced = parse_seed_doc(Path("pool.md"), RAW.replace(b"title: Pool", b"title:   'Pool'"))
    assert index_hash(lf, SETTINGS) != index_hash(crlf, SETTINGS)
    assert document_digest(lf, SETTINGS) == document_digest(crlf, SETTINGS)
    assert document_digest(lf, SETTINGS) == document_digest(spaced, SETTINGS)
    body = parse_seed_doc(Path("pool.md"), RAW.replace(b"holds 20", b"holds 30"))
    meta = parse_seed_doc(Path("pool.md"), RAW.replace(b"tags: [a, b]", b"tags: [a]"))
    digests = {document_digest(d, SETTINGS) for d in (lf, body, meta)}
    assert len(digests) == 3
    assert document_digest(lf, SETTINGS) != document_digest(lf, ChunkSettings(max_chars=600))


def test_corpus_revision_is_order_free_and_moves_with_any_document() -> None:
    hashes = {"a": "1" * 64, "b": "2" * 64}
    assert corpus_revision(hashes) == corpus_revision(dict(reversed(list(hashes.items()))))
    assert corpus_revision(hashes) != corpus_revision({**hashes, "b": "3" * 64})
    assert corpus_revision(hashes) != corpus_revision({"a": "1" * 64})
