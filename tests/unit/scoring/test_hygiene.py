"""``ragsnap.scoring.hygiene``: each check on a small corpus, one defect at a time."""

from __future__ import annotations

import re
from typing import Any

import pytest

from ragsnap.kb.corpus import SeedDocument
from ragsnap.models import GoldenCase
from ragsnap.scoring.hygiene import (
    CorpusIndex,
    Finding,
    check_cases,
    check_labels,
    check_no_answer_coverage,
    check_privacy,
    looks_random,
    needed_documents,
    quote_candidates,
)
from ragsnap.settings import ChunkSettings

POOL_BODY = (
    "Intro to the pool.\n\n"
    "## Size\n\n"
    "`maximum-pool-size` is set to 20 per pod.\n\n"
    "## Timeouts\n\n"
    "`connection-timeout` is 3000 ms. Run `kafka-consumer-groups.sh "
    "--bootstrap-server kafka:9092` to see lag."
)


def documents() -> list[SeedDocument]:
    return [
        SeedDocument(
            path="seed-docs/pool.md",
            source="mysql-pool",
            body=POOL_BODY,
            content_hash="",
            breadcrumb="Database > MySQL > Connection Pool",
            doc_id="doc-mysql-pool",
        ),
        SeedDocument(
            path="seed-docs/redis.md",
            source="redis-evict",
            body="Redis evicts keys with allkeys-lru.",
            content_hash="",
            breadcrumb="Cache > Redis",
        ),
    ]


def corpus() -> CorpusIndex:
    return CorpusIndex.build(documents(), ChunkSettings())


def case(index: int = 0, **fields: Any) -> GoldenCase:
    data: dict[str, Any] = {
        "id": f"c{index}",
        "query": "How big is the pool?",
        "language": "en",
        "category": "database",
        "split": "dev",
        "expectedSources": ["mysql-pool"],
    }
    data.update(fields)
    return GoldenCase.from_json({k: v for k, v in data.items() if v is not None}, {})


def codes(findings: list[Finding]) -> list[tuple[str, str]]:
    return [(f.code, f.pointer) for f in findings]


def test_the_corpus_is_chunked_as_seed_does() -> None:
    index = corpus()
    assert index.chunk_ids("mysql-pool") == ["mysql-pool#0", "mysql-pool#1", "mysql-pool#2"]
    assert index.source_of("chunkId", "mysql-pool#2") == "mysql-pool"
    assert index.source_of("chunkId", "mysql-pool#3") is None
    assert index.source_of("chunkId", "mysql-pool#01") is None
    assert index.source_of("docId", "doc-mysql-pool") == "mysql-pool"
    assert index.text("chunkId", "mysql-pool#1") == (
        "## Size\n\n`maximum-pool-size` is set to 20 per pod."
    )


def test_labels_that_name_the_corpus_pass() -> None:
    good = case(
        expectedDocIds=["doc-mysql-pool"],
        expectedContextSources=["mysql-pool"],
        expectedRerankTopSource="mysql-pool",
        expectedBreadcrumbs=["database > mysql"],
        judgments=[
            {"chunkId": "mysql-pool#1", "grade": 3, "spans": ["is set to 20 per pod"]},
            {"chunkId": "redis-evict#0", "grade": 0},
        ],
    )
    by_doc = case(1, judgments=[{"docId": "doc-mysql-pool", "grade": 2, "spans": ["3000 ms"]}])
    by_source = case(2, judgments=[{"source": "redis-evict", "grade": 1, "spans": ["Redis"]}])
    assert check_labels([good, by_doc, by_source], corpus()) == []


@pytest.mark.parametrize(
    ("fields", "pointer", "words"),
    [
        (
            {"judgments": [{"chunkId": "mysql-pool#7", "grade": 3}]},
            "/cases/0/judgments/0/chunkId",
            "'mysql-pool' is cut into 3 chunk(s), #0..#2 (maxChars 1200",
        ),
        (
            {"judgments": [{"chunkId": "mysql-pol#1", "grade": 3}]},
            "/cases/0/judgments/0/chunkId",
            "chunk 'mysql-pol#1' is not in the seed corpus",
        ),
        (
            {"judgments": [{"docId": "doc-mysql-pol", "grade": 3}]},
            "/cases/0/judgments/0/docId",
            "did you mean 'doc-mysql-pool'?",
        ),
        (
            {"judgments": [{"source": "postgres", "grade": 1}]},
            "/cases/0/judgments/0/source",
            "source 'postgres' is not in the seed corpus",
        ),
        ({"expectedSources": ["mysql-pool", "nope"]}, "/cases/0/expectedSources/1", "'nope'"),
        ({"expectedDocIds": ["doc-redis-evict"]}, "/cases/0/expectedDocIds/0", "document id"),
        ({"expectedContextSources": ["gone"]}, "/cases/0/expectedContextSources/0", "'gone'"),
        ({"expectedRerankTopSource": "gone"}, "/cases/0/expectedRerankTopSource", "'gone'"),
    ],
)
def test_a_missing_target_is_an_error(fields: dict[str, Any], pointer: str, words: str) -> None:
    (found,) = check_labels([case(**fields)], corpus())
    assert (found.severity, found.code, found.pointer) == ("error", "missing-target", pointer)
    assert words in found.problem + found.fix


def test_a_missing_target_does_not_also_report_its_spans() -> None:
    bad = case(judgments=[{"source": "gone", "grade": 3, "spans": ["anything"]}])
    assert codes(check_labels([bad], corpus())) == [
        ("missing-target", "/cases/0/judgments/0/source")
    ]


def test_a_span_that_is_not_verbatim_is_an_error() -> None:
    bad = case(
        judgments=[
            {"docId": "doc-mysql-pool", "grade": 3, "spans": ["3000 ms", "is set to 30 per pod"]}
        ]
    )
    (found,) = check_labels([bad], corpus())
    assert (found.code, found.pointer) == ("span-not-verbatim", "/cases/0/judgments/0/spans/1")
    assert found.problem == (
        "span 'is set to 30 per pod' does not occur verbatim in the body of 'mysql-pool'"
    )
    assert found.fix.startswith("copy the span exactly")


def test_a_span_that_differs_in_case_or_whitespace_says_so() -> None:
    bad = case(judgments=[{"source": "mysql-pool", "grade": 3, "spans": ["IS SET  to 20"]}])
    (found,) = check_labels([bad], corpus())
    assert found.problem.endswith("(it differs only in case or whitespace)")


def test_a_span_in_another_chunk_names_the_chunk_that_holds_it() -> None:
    bad = case(judgments=[{"chunkId": "mysql-pool#1", "grade": 3, "spans": ["3000 ms"]}])
    (found,) = check_labels([bad], corpus())
    assert found.code == "span-not-verbatim"
    assert found.problem == (
        "span '3000 ms' is in 'mysql-pool' but not in the judged chunk 'mysql-pool#1' "
        "(it is in 'mysql-pool#2')"
    )
    assert found.fix.startswith("judge the chunk that holds the span")


def test_a_span_across_a_chunk_boundary_says_so() -> None:
    span = "20 per pod.\n\n## Timeouts"
    bad = case(judgments=[{"chunkId": "mysql-pool#1", "grade": 3, "spans": [span]}])
    (found,) = check_labels([bad], corpus())
    assert "(it crosses a chunk boundary)" in found.problem


def test_breadcrumbs_must_prefix_a_documents_breadcrumb() -> None:
    bad = case(expectedBreadcrumbs=["Database > MySQL", "Database > MySQLX", "MySQL"])
    found = check_labels([bad], corpus())
    assert codes(found) == [
        ("breadcrumb", "/cases/0/expectedBreadcrumbs/1"),
        ("breadcrumb", "/cases/0/expectedBreadcrumbs/2"),
    ]
    assert "is not a prefix of any seed document's breadcrumb" in found[0].problem


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ("use key sk-proj-AbCdEf0123456789xyz now", "an API key (sk-...)"),
        ("AKIAIOSFODNN7EXAMPLE in the config", "an AWS access key id (AKIA...)"),
        ("token ghp_abcdefghijklmnopqrstuvwxyz0123456789", "a GitHub token (ghp_...)"),
        ("Authorization: Bearer eyJhbGciOi.J9abc123xyz", "a bearer token (Bearer ...)"),
        ("-----BEGIN RSA PRIVATE KEY-----\nMIIE", "a private key block"),
        ("jdbc url with password=hunter2", "a credential assignment (password=...)"),
        ("https://svc:s3cr3t@db.internal/x", "credentials in a URL (user:password@)"),
        ("xoxb-1234567890-abcdefghij", "a Slack token (xox...)"),
    ],
)
def test_a_secret_is_an_error_and_is_never_repeated(text: str, name: str) -> None:
    found = [f for f in check_privacy({"cases": [{"query": text}]}) if f.code == "secret"]
    assert found, text
    assert found[0].pointer == "/cases/0/query"
    # the rule's name and an offset, never the matched text
    assert re.fullmatch(rf"holds {re.escape(name)} at character \d+", found[0].problem)


def test_a_long_random_token_is_a_secret() -> None:
    token = "Zx8Qp2Lr7Vt4Nm1Kd9Hs3Wb6Yc5Fg0Je"
    (found,) = check_privacy({"cases": [{"notes": f"the key is {token}"}]})
    assert (found.code, found.pointer) == ("secret", "/cases/0/notes")
    assert found.problem == (
        "holds a long random-looking token at character 11 (an API key or token?)"
    )
    assert token not in found.problem


@pytest.mark.parametrize(
    "token",
    [
        "spring.datasource.hikari.maximum-pool-size",
        "SQLTransientConnectionException",
        "db-err-4031-order-repository",
        "0123456789abcdef0123456789abcdef01234567",  # a hex digest
        "Short1Token",
        "how_is_BERT_pre-trained--bed61e8933ff",  # an imported query id: words and a digest
    ],
)
def test_identifiers_do_not_look_random(token: str) -> None:
    assert not looks_random(token)


@pytest.mark.parametrize(
    "text",
    [
        "logs under /home/alice/app",
        "see /Users/bob/notes.txt",
        r"C:\Users\carol\eval.json",
        "copy it to ~/eval",
        r"\\fileserver\share\cases",
    ],
)
def test_a_personal_path_is_an_error(text: str) -> None:
    (found,) = check_privacy({"cases": [{"expectedKeywords": ["x", text]}]})
    assert (found.code, found.pointer) == ("absolute-path", "/cases/0/expectedKeywords/1")
    assert found.fix.startswith("remove it or write a relative path")


@pytest.mark.parametrize(
    "text",
    [
        "ask http://10.0.0.5/api",
        "https://wiki.internal.example.com/runbooks",
        "connect to redis-master:6379",
        "localhost:8080 answers",
        "the broker at 10.1.2.3:9092",
    ],
)
def test_an_endpoint_is_an_error(text: str) -> None:
    found = check_privacy({"cases": [{"query": text}]})
    assert [f.code for f in found] == ["endpoint"]
    assert found[0].fix == (
        "remove it or write a placeholder such as <service-url> or <host>:<port>"
    )


@pytest.mark.parametrize(
    "text",
    [
        "What does ERR-4031 from OrderRepository mean?",
        "pt-query-digest /var/lib/mysql/slow.log groups statements",
        "/api/knowledge/lookup returns evidence",
        "maxSurge: 25% and maxUnavailable: 0",
        "a ratio of 3:1, at 10:30 every day",
        "and/or 24/7",
        "缓存雪崩时间：30秒",
        "Database > MySQL > Connection Pool",
        "ERR:4031 from OrderRepository",
        "How do I send a Bearer token? Bearer authentication fails",
        "tuning an sk-learn-pipeline-for-ranking",
        "What does the secret rotation job do",
    ],
)
def test_ordinary_text_passes(text: str) -> None:
    assert check_privacy({"cases": [{"query": text}]}) == []


def test_a_span_may_quote_an_endpoint_of_the_corpus_but_a_query_may_not() -> None:
    quoted = "--bootstrap-server kafka:9092"
    document = {
        "cases": [
            {
                "query": f"what does {quoted} do",
                "expectedKeywords": [quoted],
                "judgments": [{"chunkId": "mysql-pool#2", "grade": 3, "spans": [quoted]}],
            },
            {"expectedKeywords": ["--bootstrap-server kafka:9093"]},  # not in the corpus
        ]
    }
    assert codes(check_privacy(document, corpus())) == [
        ("endpoint", "/cases/0/query"),
        ("endpoint", "/cases/1/expectedKeywords/0"),
    ]


def test_a_span_never_excuses_a_secret() -> None:
    key = "AKIAIOSFODNN7EXAMPLE"
    index = CorpusIndex.build([SeedDocument("d.md", "d", f"key {key}", "")], ChunkSettings())
    document = {"cases": [{"judgments": [{"source": "d", "grade": 3, "spans": [key]}]}]}
    assert codes(check_privacy(document, index)) == [("secret", "/cases/0/judgments/0/spans/0")]


def test_every_string_of_the_file_is_scanned() -> None:
    document = {"description": "from /home/dave/x", "defaults": {"kbScope": "a"}, "cases": []}
    assert codes(check_privacy(document)) == [("absolute-path", "/description")]


def test_a_language_without_a_no_answer_case_is_an_error_unless_the_project_opts_out() -> None:
    cases = [
        case(0),
        case(1, language="zh"),
        case(2, language="zh"),
        case(3, noAnswer=True, expectedSources=None),
        case(4, language="pt-BR", noAnswer=True, expectedSources=None),
    ]
    (found,) = check_no_answer_coverage(cases)
    assert (found.severity, found.code, found.pointer) == (
        "error",
        "no-answer-coverage",
        "/cases",
    )
    assert found.problem.startswith("language 'zh' has 2 answerable case(s) and no no-answer case")
    assert '"language": "zh", "noAnswer": true' in found.fix
    assert "scoring.noAnswerCoverage: warning" in found.fix  # how to opt out
    (opted,) = check_no_answer_coverage(cases, "warning")
    assert (opted.severity, opted.problem) == ("warning", found.problem)
    assert "noAnswerCoverage" not in opted.fix
    assert (
        check_no_answer_coverage(
            [*cases, case(5, language="zh", noAnswer=True, expectedSources=None)]
        )
        == []
    )


def test_check_cases_lists_errors_first_then_warnings_in_file_order() -> None:
    cases = [case(i) for i in range(11)]
    cases[10] = case(10, expectedSources=["gone"])
    cases[2] = case(2, expectedSources=["gone"], language="zh")
    document = {"cases": [{"query": "q"} for _ in range(10)] + [{"notes": "see ~/x"}]}
    found = check_cases(document, cases, corpus(), "warning")
    assert [(f.severity, f.pointer) for f in found] == [
        ("error", "/cases/2/expectedSources/0"),
        ("error", "/cases/10/expectedSources/0"),
        ("error", "/cases/10/notes"),
        ("warning", "/cases"),  # no no-answer case at all: one warning for the set
    ]
    assert (
        found[0]
        .line("cases/golden-cases.json")
        .startswith(
            "error: cases/golden-cases.json at /cases/2/expectedSources/0: source 'gone' is not"
        )
    )


def test_only_the_judged_documents_keep_their_text() -> None:
    judged = [
        case(judgments=[{"chunkId": "mysql-pool#1", "grade": 3, "spans": ["20 per pod"]}]),
        case(1, judgments=[{"source": "redis-evict", "grade": 0}]),  # no span: no text
    ]
    keep = needed_documents(judged)
    assert keep == {"mysql-pool"}
    index = CorpusIndex.build(documents(), ChunkSettings(), keep=keep)
    assert set(index.bodies) == {"mysql-pool"}
    assert set(index.chunk_texts) == {"mysql-pool#0", "mysql-pool#1", "mysql-pool#2"}
    assert index.source_of("source", "redis-evict") == "redis-evict"  # ids of every document
    assert check_labels(judged, index) == []


def test_quotes_are_looked_up_while_the_corpus_is_read() -> None:
    document = {
        "cases": [
            {
                "query": "lag?",
                "expectedKeywords": ["--bootstrap-server kafka:9092"],
                "judgments": [{"source": "redis-evict", "grade": 1, "spans": ["see ~/notes"]}],
            }
        ]
    }
    assert quote_candidates(document) == {"kafka:9092", "~/"}
    index = CorpusIndex.build(
        documents(), ChunkSettings(), keep=set(), quotes=quote_candidates(document)
    )
    assert index.bodies == {}
    assert index.quoted == {"kafka:9092"}
    assert codes(check_privacy(document, index)) == [
        ("absolute-path", "/cases/0/judgments/0/spans/0")
    ]


def test_a_relevant_target_outside_the_cases_kb_scope_is_an_error() -> None:
    docs = [
        SeedDocument("a.md", "ours", "Pool size 20.", "", kb_scope="rag-eval"),
        SeedDocument("b.md", "theirs", "Pool size 30.", "", kb_scope="other-team"),
        SeedDocument("c.md", "nobodys", "Pool size 40.", ""),
    ]
    index = CorpusIndex.build(docs, ChunkSettings())
    scoped = case(
        kbScope="rag-eval",
        expectedSources=["ours", "theirs"],
        expectedContextSources=["nobodys"],
        judgments=[
            {"source": "ours", "grade": 3, "spans": ["size 20"]},
            {"source": "theirs", "grade": 0},  # a judged decoy may live anywhere
            {"source": "nobodys", "grade": 1, "spans": ["size 40"]},
        ],
    )
    found = check_labels([scoped], index)
    assert codes(found) == [
        ("out-of-scope", "/cases/0/judgments/2/source"),
        ("out-of-scope", "/cases/0/expectedSources/1"),
        ("out-of-scope", "/cases/0/expectedContextSources/0"),
    ]
    assert found[1].problem == (
        "source 'theirs' is in kb_scope 'other-team', and the case looks up inside kb_scope "
        "'rag-eval' only, so it can never be returned"
    )
    assert "is in no kb_scope" in found[0].problem
    unscoped = case(expectedSources=["theirs"], judgments=[{"source": "nobodys", "grade": 2}])
    assert check_labels([unscoped], index) == []


def test_a_set_without_any_no_answer_case_gets_one_warning_not_an_error() -> None:
    # a public IR collection imported as it is (Cranfield, BEIR, TREC) has none at all
    cases = [case(0), case(1, language="zh")]
    (found,) = check_no_answer_coverage(cases)
    assert (found.severity, found.code, found.pointer) == (
        "warning",
        "no-answer-coverage",
        "/cases",
    )
    assert found.problem == (
        "no case is a no-answer case, so no-answer false positives are not measured"
    )
    assert check_no_answer_coverage([]) == []
