"""Seed documents and chunking (ragsnap.kb.corpus)."""

from __future__ import annotations

import hashlib
import itertools
from pathlib import Path

import pytest

from conftest import REPO
from ragsnap.errors import InputError
from ragsnap.kb.corpus import (
    ChunkSettings,
    SeedDocument,
    chunk_document,
    load_seed_docs,
    parse_seed_doc,
)

PATH = Path("seed-docs/doc.md")

FULL = """---
source: mysql-connection-pool
title: "  MySQL Connection Pool  "
breadcrumb: Database > MySQL > Connection Pool
category: database
kb_scope: rag-eval
doc_id: doc-mysql-connection-pool
keywords: [hikari, pool]
updated: 2024-05-01
owner:
  team: dba
  since: 2023-01-02
---

Intro line.

## Sizing

Body text.
"""


def doc(body: str, source: str = "doc") -> SeedDocument:
    return SeedDocument(path=f"{source}.md", source=source, body=body, content_hash="h")


def parse_error(raw: bytes | str) -> InputError:
    data = raw.encode("utf-8") if isinstance(raw, str) else raw
    with pytest.raises(InputError) as info:
        parse_seed_doc(PATH, data)
    err = info.value
    assert err.exit_code == 2
    assert err.path == str(PATH)
    assert str(err).startswith(str(PATH))
    assert err.fix and err.fix in str(err)
    return err


# --- parsing -----------------------------------------------------------------


def test_parse_reads_every_field() -> None:
    raw = FULL.encode("utf-8")
    parsed = parse_seed_doc(PATH, raw)
    assert parsed.path == str(PATH)
    assert parsed.source == "mysql-connection-pool"
    assert parsed.title == "MySQL Connection Pool"
    assert parsed.breadcrumb == "Database > MySQL > Connection Pool"
    assert parsed.category == "database"
    assert parsed.kb_scope == "rag-eval"
    assert parsed.doc_id == "doc-mysql-connection-pool"
    assert parsed.content_hash == hashlib.sha256(raw).hexdigest()


def test_extra_keys_become_metadata_with_dates_as_strings() -> None:
    parsed = parse_seed_doc(PATH, FULL.encode("utf-8"))
    assert parsed.metadata == {
        "keywords": ["hikari", "pool"],
        "updated": "2024-05-01",
        "owner": {"team": "dba", "since": "2023-01-02"},
    }
    for key in ("source", "title", "breadcrumb", "category", "kb_scope", "doc_id"):
        assert key not in parsed.metadata


def test_body_excludes_the_header() -> None:
    parsed = parse_seed_doc(PATH, FULL.encode("utf-8"))
    assert parsed.body == "Intro line.\n\n## Sizing\n\nBody text."
    assert "source:" not in parsed.body
    assert "---" not in parsed.body


def test_optional_fields_default_to_none_and_crlf_bom_are_accepted() -> None:
    raw = "\ufeff---\r\nsource: a.b/c:d_e-1\r\ntitle: '  '\r\n---\r\nText\r\n".encode()
    parsed = parse_seed_doc(PATH, raw)
    assert parsed.source == "a.b/c:d_e-1"
    assert parsed.title is None  # blank text counts as missing
    assert (parsed.breadcrumb, parsed.category, parsed.kb_scope, parsed.doc_id) == (None,) * 4
    assert parsed.metadata == {}
    assert parsed.body == "Text"


def test_no_header() -> None:
    err = parse_error("# Title\n\nsource: x\n")
    assert "no frontmatter header" in err.problem
    assert "---" in err.fix


def test_unclosed_header() -> None:
    err = parse_error("---\nsource: x\ntitle: y\n\nbody\n")
    assert "never closed" in err.problem


def test_malformed_yaml_points_at_the_line() -> None:
    err = parse_error("---\nsource: x\ntitle: a: b\n---\nbody\n")
    assert "not valid YAML" in err.problem
    assert err.pointer == "line 3"
    assert "line 3" in str(err)


def test_header_that_is_a_list() -> None:
    err = parse_error("---\n- source\n- x\n---\nbody\n")
    assert "not a mapping" in err.problem
    assert "source:" in err.fix


def test_empty_header_is_not_a_mapping() -> None:
    err = parse_error("---\n---\nbody\n")
    assert "not a mapping" in err.problem


def test_missing_source() -> None:
    err = parse_error("---\ntitle: t\n---\nbody\n")
    assert "no `source`" in err.problem
    assert err.pointer == "source"


@pytest.mark.parametrize("value", ["'has space'", "-leading-dash", "'x#1'", "123", "[a]", "''"])
def test_bad_source_id(value: str) -> None:
    err = parse_error(f"---\nsource: {value}\n---\nbody\n")
    assert "not a usable id" in err.problem
    assert err.pointer == "source"


def test_source_longer_than_200_characters() -> None:
    assert parse_seed_doc(PATH, f"---\nsource: {'a' * 200}\n---\n".encode()).source == "a" * 200
    parse_error(f"---\nsource: {'a' * 201}\n---\n")


@pytest.mark.parametrize(
    ("key", "value", "type_name"),
    [("title", "42", "int"), ("breadcrumb", "[a, b]", "list"), ("doc_id", "true", "bool")],
)
def test_non_string_text_field(key: str, value: str, type_name: str) -> None:
    err = parse_error(f"---\nsource: x\n{key}: {value}\n---\nbody\n")
    assert err.problem == f"`{key}` must be text, not {type_name}"
    assert err.pointer == key


def test_non_utf8_bytes() -> None:
    err = parse_error("---\nsource: x\ntitle: café\n---\n".encode("latin-1"))
    assert "not UTF-8" in err.problem
    assert "UTF-8" in err.fix


# --- loading a folder ---------------------------------------------------------


def write_doc(folder: Path, name: str, source: str, body: str = "Body.") -> Path:
    path = folder / name
    path.write_text(f"---\nsource: {source}\n---\n{body}\n", encoding="utf-8")
    return path


def test_load_is_sorted_by_file_name(tmp_path: Path) -> None:
    write_doc(tmp_path, "b.md", "second")
    write_doc(tmp_path, "a.md", "first")
    write_doc(tmp_path, "c.md", "third")
    (tmp_path / "notes.txt").write_text("not a seed doc", encoding="utf-8")
    docs = load_seed_docs(tmp_path)
    assert [d.source for d in docs] == ["first", "second", "third"]
    assert [Path(d.path).name for d in docs] == ["a.md", "b.md", "c.md"]


def test_duplicate_source_names_both_files(tmp_path: Path) -> None:
    first = write_doc(tmp_path, "a.md", "same")
    second = write_doc(tmp_path, "b.md", "same")
    with pytest.raises(InputError) as info:
        load_seed_docs(tmp_path)
    message = str(info.value)
    assert str(first) in message
    assert str(second) in message
    assert "'same'" in message
    assert info.value.exit_code == 2


def test_one_bad_file_stops_the_load(tmp_path: Path) -> None:
    write_doc(tmp_path, "a.md", "fine")
    bad = tmp_path / "b.md"
    bad.write_text("no header\n", encoding="utf-8")
    with pytest.raises(InputError) as info:
        load_seed_docs(tmp_path)
    assert info.value.path == str(bad)


def test_empty_folder(tmp_path: Path) -> None:
    (tmp_path / "readme.txt").write_text("x", encoding="utf-8")
    with pytest.raises(InputError) as info:
        load_seed_docs(tmp_path)
    assert info.value.path == str(tmp_path)
    assert "no *.md" in info.value.problem


def test_not_a_folder(tmp_path: Path) -> None:
    file = write_doc(tmp_path, "a.md", "x")
    for path in (file, tmp_path / "missing"):
        with pytest.raises(InputError) as info:
            load_seed_docs(path)
        assert info.value.path == str(path)
        assert info.value.problem in (
            "not found",
            "is neither a folder of *.md seed documents nor a .jsonl corpus",
        )
        assert "--seed-docs" in info.value.fix


# --- chunking -----------------------------------------------------------------

BODY = """Intro paragraph.

## First

First text.

### Sub heading stays inside

More first text.

## Second

Second text."""


def test_intro_then_one_chunk_per_section() -> None:
    chunks = chunk_document(doc(BODY, "src"), ChunkSettings())
    assert [c.text for c in chunks] == [
        "Intro paragraph.",
        "## First\n\nFirst text.\n\n### Sub heading stays inside\n\nMore first text.",
        "## Second\n\nSecond text.",
    ]
    assert [c.heading for c in chunks] == [None, "First", "Second"]
    assert [c.chunk_id for c in chunks] == ["src#0", "src#1", "src#2"]
    assert [c.ordinal for c in chunks] == [0, 1, 2]
    assert {c.source for c in chunks} == {"src"}


def test_no_intro_starts_at_the_first_heading() -> None:
    chunks = chunk_document(doc("## Only\n\ntext", "s"), ChunkSettings())
    assert [(c.chunk_id, c.heading, c.text) for c in chunks] == [("s#0", "Only", "## Only\n\ntext")]


def test_body_without_headings_is_one_chunk() -> None:
    chunks = chunk_document(doc("Just text.\n\n# Level one is not split\n\nmore"), ChunkSettings())
    assert len(chunks) == 1
    assert chunks[0].text == "Just text.\n\n# Level one is not split\n\nmore"


def test_heading_level_setting() -> None:
    chunks = chunk_document(doc(BODY), ChunkSettings(heading_level=3))
    assert [c.heading for c in chunks] == [None, "Sub heading stays inside"]
    assert chunks[1].text.startswith("### Sub heading stays inside")


def test_heading_inside_a_code_fence_is_not_a_heading() -> None:
    body = "Intro.\n\n## Real\n\n```bash\n## not a heading\necho hi\n```\n\n~~~\n## also not\n~~~\n\n## Next\n\nend"
    chunks = chunk_document(doc(body), ChunkSettings())
    assert [c.heading for c in chunks] == [None, "Real", "Next"]
    assert "## not a heading" in chunks[1].text
    assert "## also not" in chunks[1].text


def test_empty_body_and_blank_sections_give_no_chunks() -> None:
    assert chunk_document(doc(""), ChunkSettings()) == []
    assert chunk_document(doc("\n\n  \n"), ChunkSettings()) == []
    chunks = chunk_document(doc("\n\n## A\n\ntext"), ChunkSettings())
    assert [c.chunk_id for c in chunks] == ["doc#0"]


def long_section(words: int = 400) -> str:
    """A heading and unique words (w0000 ...), with a paragraph break now and then."""
    parts = ["## Long"]
    paragraph: list[str] = []
    for i in range(words):
        paragraph.append(f"w{i:04d}")
        if i % 37 == 36:
            parts.append(" ".join(paragraph))
            paragraph = []
    parts.append(" ".join(paragraph))
    return "\n\n".join(p for p in parts if p)


def test_long_section_is_split_into_overlapping_pieces() -> None:
    settings = ChunkSettings(max_chars=300, overlap_chars=60)
    chunks = chunk_document(doc(long_section(), "s"), settings)
    assert len(chunks) > 5
    assert [c.chunk_id for c in chunks] == [f"s#{n}" for n in range(len(chunks))]
    assert {c.heading for c in chunks} == {"Long"}
    for chunk in chunks:
        assert chunk.text and chunk.text == chunk.text.strip()
        assert len(chunk.text) <= 300
    for prev, nxt in itertools.pairwise(chunks):
        first_word = nxt.text.split()[0]
        assert first_word in prev.text.split(), (prev.text, nxt.text)
        # the overlap is the end of the previous piece
        head = nxt.text[: nxt.text.index(prev.text.split()[-1]) + 5]
        assert prev.text.endswith(head), (prev.text, nxt.text)
    # every word survives, in order
    seen = [w for c in chunks for w in c.text.split() if w.startswith("w")]
    assert sorted(set(seen)) == [f"w{i:04d}" for i in range(400)]


def test_no_overlap_when_overlap_is_zero() -> None:
    settings = ChunkSettings(max_chars=300, overlap_chars=0)
    chunks = chunk_document(doc(long_section()), settings)
    assert len(chunks) > 5
    for prev, nxt in itertools.pairwise(chunks):
        assert len(prev.text) <= 300
        assert nxt.text.split()[0] not in prev.text.split()
    words = [w for c in chunks for w in c.text.split() if w.startswith("w")]
    assert words == [f"w{i:04d}" for i in range(400)]  # each word exactly once


def test_text_without_spaces_is_cut_at_max_chars() -> None:
    body = "x" * 1000
    chunks = chunk_document(doc(body), ChunkSettings(max_chars=300, overlap_chars=50))
    assert all(len(c.text) <= 300 for c in chunks)
    assert "".join(c.text for c in chunks) == body


def test_settings_fingerprint_changes_with_each_setting() -> None:
    base = ChunkSettings()
    variants = [
        ChunkSettings(max_chars=base.max_chars + 1),
        ChunkSettings(overlap_chars=base.overlap_chars + 1),
        ChunkSettings(heading_level=3),
    ]
    prints = {base.fingerprint(), *(v.fingerprint() for v in variants)}
    assert len(prints) == 4
    assert ChunkSettings().fingerprint() == base.fingerprint()


def assert_covered(body: str, texts: list[str]) -> None:
    """Each chunk is a piece of ``body`` in order, and together they cover
    every non-space character of it."""
    covered = [False] * len(body)
    cursor = 0
    for text in texts:
        at = body.find(text, cursor)
        assert at >= 0, f"chunk not found in order in the body: {text[:80]!r}"
        for i in range(at, at + len(text)):
            covered[i] = True
        cursor = at + 1
    lost = "".join(ch for ch, ok in zip(body, covered, strict=True) if not ok and not ch.isspace())
    assert lost == ""


SEED_DOCS = sorted((REPO / "seed-docs").glob("*.md"))


@pytest.mark.parametrize(
    "settings",
    [ChunkSettings(), ChunkSettings(max_chars=300, overlap_chars=40), ChunkSettings(200, 0)],
    ids=lambda s: s.fingerprint(),
)
def test_real_seed_docs_chunk_without_loss(settings: ChunkSettings) -> None:
    assert SEED_DOCS, "the repo's seed-docs/ folder should hold Markdown files"
    docs = load_seed_docs(REPO / "seed-docs")
    assert len(docs) == len(SEED_DOCS)
    for seed in docs:
        chunks = chunk_document(seed, settings)
        assert chunks, seed.path
        texts = [c.text for c in chunks]
        assert all(t and len(t) <= settings.max_chars for t in texts), seed.path
        assert [c.chunk_id for c in chunks] == [f"{seed.source}#{n}" for n in range(len(chunks))]
        joined = "\n".join(texts)
        if settings == ChunkSettings():
            for line in seed.body.split("\n"):
                if line.strip():
                    assert line.strip() in joined, (seed.path, line)
        assert_covered(seed.body, texts)


def test_header_boundaries_are_whole_lines() -> None:
    # YAML's '...' ends a header; a later '---' (a Markdown rule) stays in the body;
    # '----' is no boundary, so a header "closed" by it is never closed
    parsed = parse_seed_doc(PATH, b"---  \nsource: x\n...\nabove\n\n---\n\nbelow\n")
    assert parsed.body == "above\n\n---\n\nbelow"
    assert "never closed" in parse_error("---\nsource: x\n----\nbody\n").problem
    assert "no frontmatter header" in parse_error("----\nsource: x\n---\nbody\n").problem


def test_yaml_error_lines_count_blank_header_lines() -> None:
    err = parse_error("---\n\n\nsource: x\ntitle: a: b\n---\nbody\n")
    assert err.pointer == "line 5"
