"""A tiny project whose golden cases are designed against the mutation catalogue:
which case each fault breaks is known (``tests/unit/audit/test_runner.py``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

#: source -> (frontmatter lines, body)
DOCS: dict[str, tuple[str, str]] = {
    "mysql-pool": (
        "title: MySQL connection pool\nbreadcrumb: Database > MySQL > Pool\n"
        "category: database\nkb_scope: team\ndoc_id: doc-mysql-pool\nkeywords: [hikari, pool, ERR-4031]",
        "The order service reaches MySQL through HikariCP.\n\n"
        "## Pool sizing\n\nmaximumPoolSize is 20 for the order service. Raise it only with "
        "evidence from the pool metrics.\n\n"
        "## Timeouts\n\nWhen a thread waits longer than connectionTimeout of 3000 ms, the "
        "repository logs ERR-4031 and the request fails.\n\n"
        "## Leak detection\n\nleakDetectionThreshold is 60000 ms; a borrowed connection held "
        "longer than a minute is reported as a leak.",
    ),
    "mysql-replication": (
        "title: MySQL replication lag\nbreadcrumb: Database > MySQL > Replication\n"
        "category: database\nkb_scope: team\ndoc_id: doc-mysql-replication",
        "Replicas copy the primary's binary log.\n\n"
        "## Replica delay\n\nSeconds_Behind_Master above 30 pages the on-call engineer; "
        "large transactions are the usual cause.",
    ),
    "redis-eviction": (
        "title: Redis eviction\nbreadcrumb: Cache > Redis > Eviction\ncategory: cache\n"
        "kb_scope: team\ndoc_id: doc-redis-eviction",
        "## Eviction policy\n\nThe cache runs allkeys-lru with maxmemory 4gb. When memory is "
        "full, the least recently used keys are evicted first.",
    ),
    "redis-failover": (
        "title: Redis failover\nbreadcrumb: Cache > Redis > Failover\ncategory: cache\n"
        "kb_scope: team\ndoc_id: doc-redis-failover",
        "## Sentinel\n\nThree sentinels watch the primary; a failover promotes a replica after "
        "5 seconds without an answer from the primary.",
    ),
    "kafka-lag": (
        "title: Kafka consumer lag\nbreadcrumb: Messaging > Kafka > Lag\ncategory: messaging\n"
        "kb_scope: team\ndoc_id: doc-kafka-lag",
        "## Consumer lag\n\nLag grows when consumers are rebalancing or slow. Alert when lag "
        "exceeds 10000 messages.\n\n"
        "## Tuning\n\nStart with the consumer's poll loop. Each poll returns at most "
        "max.poll.records records, 500 by default, and the consumer must call poll again "
        "within max.poll.interval.ms or the group coordinator removes it from the group. "
        "Slow handlers therefore cause rebalances, and rebalances stop every consumer of the "
        "group for a while.\n\n"
        "Lower max.poll.records to 100 when a handler writes to the database, so one poll "
        "always finishes well inside the interval. Raise fetch.min.bytes to 65536 to batch "
        "small messages, and keep session.timeout.ms at 45000 so a consumer that crashed "
        "leaves the group quickly.",
    ),
    "billing-pool": (
        "title: Billing connection pool\nbreadcrumb: Database > Billing > Pool\n"
        "category: database\nkb_scope: billing",
        "## Timeouts\n\nBilling logs ERR-4031 when its pool of 5 connections is exhausted; "
        "its connectionTimeout is 1000 ms.",
    ),
}

CONFIG = """\
kb:
  chunking: {maxChars: 400, overlapChars: 40, headingLevel: 2}
lookup:
  topK: 3
  contextBudgetChars: 400
"""


def case(case_id: str, query: str, category: str, **fields: Any) -> dict[str, Any]:
    return {
        "id": case_id,
        "query": query,
        "language": "en",
        "category": category,
        "split": "dev",
        **fields,
    }


CASES: list[dict[str, Any]] = [
    case(
        "err-code",
        "What does ERR-4031 mean for the order service?",
        "database",
        expectedSources=["mysql-pool"],
        expectedKeywords=["ERR-4031"],
        expectedSelectedAttempt="filtered",
        expectedContextSources=["mysql-pool"],
        judgments=[{"chunkId": "mysql-pool#2", "grade": 3}],
    ),
    case(
        "replica-delay",
        "What counts as replica delay?",
        "database",
        expectedSources=["mysql-replication"],
        expectedKeywords=["Seconds_Behind_Master"],
    ),
    case(
        "eviction",
        "Which keys does the cache evict when memory is full?",
        "cache",
        expectedSources=["redis-eviction"],
        expectedKeywords=["allkeys-lru"],
        minHitLevel="strong",
    ),
    case(
        "failover-top",
        "How does Sentinel failover promote a replica?",
        "cache",
        expectedSources=["redis-failover"],
        expectedRerankTopSource="redis-failover",
    ),
    case(
        "poll-records",
        "What should max.poll.records be when a handler writes to the database?",
        "messaging",
        expectedSources=["kafka-lag"],
        expectedKeywords=["max.poll.records"],
        judgments=[{"chunkId": "kafka-lag#2", "grade": 3}],
    ),
    case(
        "pool-and-replication",
        "MySQL pool sizing and replica delay",
        "database",
        expectedSources=["mysql-pool", "mysql-replication"],
        expectedContextSources=["mysql-pool", "mysql-replication"],
        judgments=[
            {"chunkId": "mysql-pool#1", "grade": 2},
            {"chunkId": "mysql-replication#1", "grade": 2},
        ],
    ),
]


def write_project(root: Path) -> Path:
    """The tiny project in ``root``: ragsnap.yaml, seed-docs/, cases/golden-cases.json;
    returns ``root``."""
    docs = root / "seed-docs"
    docs.mkdir(parents=True)
    for source, (front, body) in DOCS.items():
        (docs / f"{source}.md").write_text(
            f"---\nsource: {source}\n{front}\n---\n{body}\n", encoding="utf-8"
        )
    (root / "ragsnap.yaml").write_text(CONFIG, encoding="utf-8")
    (root / "cases").mkdir()
    document = {
        "schemaVersion": 1,
        "defaults": {"kbScope": "team", "topK": 3, "minHitLevel": "medium"},
        "cases": CASES,
    }
    (root / "cases" / "golden-cases.json").write_text(json.dumps(document, indent=2) + "\n")
    return root
