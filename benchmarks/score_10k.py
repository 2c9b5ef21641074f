#!/usr/bin/env python3
"""Benchmark ``ragsnap score`` plus a baseline diff on 10,000 cases against its floor.

The floor is the least any tool giving ragsnap's guarantees on the inputs must do,
done the fastest way this machine has: read every input file (one ``read``), hash
it (SHA-256, the digests the report records), parse it (``orjson.loads``, the
parser ragsnap uses) and validate it against its JSON Schema (jsonschema-rs
``is_valid``, the compiled Draft 7 validator of ragsnap's own schema files).
ragsnap does that and more: it builds the models, runs the label checks (privacy
scan included) and the provenance check, scores every case, diffs against a
baseline (stage attribution included) and writes four reports. ``orjson.loads``
alone, the peer until issue 44, is timed beside it for information. Targets
(issue 44), judged on CPU time: ragsnap <= ``TARGET_IN_PROCESS`` x the floor in
process, <= ``TARGET_PROCESSES`` x as whole processes, peak RSS of the ragsnap
process <= ``TARGET_RSS_MIB`` MiB.

Steps:

1. Generate a realistic eval set, deterministically from ``--seed``: a golden
   cases file and one pretty-printed fixture per case under
   ``fixtures/{caseId}.json`` (English and Chinese, dev and test, ~5%
   no-answer cases, pipeline expectations, most cases passing).
2. Write a baseline with ``ragsnap score``, then perturb ~2% of the fixtures
   so that the diff finds regressions (and a few improvements).
3. Warm the file cache with one untimed pass of each side, then time the sides
   ``--repeat`` rounds, each round in a fresh random order: in this process the
   floor, orjson alone and ``ragsnap.cli.main(score ...)``; as whole processes
   (unless ``--no-processes``) the floor as a script and ``python -m ragsnap
   score ...``, each under a wrapper that reports its own peak RSS (``VmHWM``).
   Each run records wall-clock time, thread CPU (``time.thread_time``), process
   CPU (``time.process_time``; for a child, user + system from ``wait4``) and
   peak RSS (in process: ``VmHWM`` reset before each run with ``clear_refs``).
4. Print the table (medians), the ratios by wall, thread and process CPU, the
   verdicts (on process CPU: ragsnap's worker threads count), the CPU, the load
   average before and after, versions; with ``--phases``, the thread CPU of each
   step of the score command (no profiler); with ``--profile``, the share of each
   part of one more ragsnap run under cProfile and its top 25.

Usage::

    python benchmarks/score_10k.py [--cases 10000] [--blocks 10] [--repeat 3]
                                   [--workdir DIR] [--keep] [--profile]
                                   [--phases] [--no-processes]

With ``--workdir`` the eval set is generated there (or reused when it was
generated there with the same settings) and never deleted; otherwise it goes
to a fresh temporary folder that is deleted at the end unless ``--keep``.
"""

# The Chinese text below uses full-width punctuation on purpose (RUF001).
# ruff: noqa: RUF001

from __future__ import annotations

import argparse
import contextlib
import cProfile
import functools
import gc
import hashlib
import io
import json
import os
import platform
import pstats
import random
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from _common import add_folder_options, cpu_model, peak_rss_mb, version, work_folder
from ragsnap.cli import main as ragsnap_main

try:
    import orjson
except ImportError:  # pragma: no cover - orjson is a ragsnap dependency
    orjson = None

#: issue 44's targets, judged on CPU time: ragsnap / the floor in process and as whole
#: processes, and the peak RSS of the ragsnap process
TARGET_IN_PROCESS = 1.6
TARGET_PROCESSES = 2.0
TARGET_RSS_MIB = 100.0
DEFAULT_SEED = 20261129
#: Bump when the generated data changes, so a reused --workdir is regenerated.
GENERATOR_VERSION = 2
KB_SCOPE = "rag-eval"
DEFAULT_TOP_K = 5
CONTEXT_BUDGET = 6000

CASES_FILE = Path("cases/golden-cases.json")
FIXTURES_DIR = Path("fixtures")
REPORTS_DIR = Path("reports")
BASE_JSON = REPORTS_DIR / "baseline.json"
BASE_MD = REPORTS_DIR / "baseline.md"
MANIFEST = Path("benchmark.json")


# --------------------------------------------------------------------------- catalogue


@dataclass(frozen=True, slots=True)
class Subject:
    """One knowledge-base topic; documents are its aspects for each service."""

    slug: str
    category: str
    en_path: tuple[str, ...]
    zh_path: tuple[str, ...]
    en_name: str
    zh_name: str
    en_terms: tuple[str, ...]
    zh_terms: tuple[str, ...]
    params: tuple[str, ...]
    code_prefix: str
    unit: str


def _subject(
    slug: str,
    category: str,
    en: str,
    zh: str,
    en_terms: str,
    zh_terms: str,
    params: str,
    code_prefix: str,
    unit: str,
) -> Subject:
    en_path, zh_path = tuple(en.split(" > ")), tuple(zh.split(" > "))
    return Subject(
        slug,
        category,
        en_path,
        zh_path,
        en_path[-1],
        zh_path[-1],
        tuple(en_terms.split("; ")),
        tuple(zh_terms.split("; ")),
        tuple(params.split("; ")),
        code_prefix,
        unit,
    )


SUBJECTS = (
    _subject(
        "mysql-connection-pool",
        "database",
        "Database > MySQL > Connection Pool",
        "数据库 > MySQL > 连接池",
        "pool exhaustion; connection leak; borrow timeout",
        "连接池耗尽; 连接泄漏; 获取连接超时",
        "maximum-pool-size; connection-timeout; leak-detection-threshold",
        "ERR",
        "ms",
    ),
    _subject(
        "mysql-replication",
        "database",
        "Database > MySQL > Replication",
        "数据库 > MySQL > 主从复制",
        "replication lag; relay log backlog; stale reads",
        "复制延迟; 中继日志积压; 读到旧数据",
        "replica_parallel_workers; sync_binlog; binlog_format",
        "REPL",
        "s",
    ),
    _subject(
        "mysql-slow-query",
        "database",
        "Database > MySQL > Slow Query Log",
        "数据库 > MySQL > 慢查询日志",
        "slow query; full table scan; missing index",
        "慢查询; 全表扫描; 缺少索引",
        "long_query_time; log_queries_not_using_indexes; innodb_buffer_pool_size",
        "SQL",
        "ms",
    ),
    _subject(
        "postgres-autovacuum",
        "database",
        "Database > PostgreSQL > Autovacuum",
        "数据库 > PostgreSQL > 自动清理",
        "table bloat; transaction ID wraparound; dead tuples",
        "表膨胀; 事务号回卷; 死元组",
        "autovacuum_vacuum_scale_factor; autovacuum_max_workers; maintenance_work_mem",
        "PG",
        "MB",
    ),
    _subject(
        "redis-eviction",
        "cache",
        "Cache > Redis > Eviction",
        "缓存 > Redis > 淘汰策略",
        "key eviction; memory fragmentation; cache stampede",
        "键被淘汰; 内存碎片; 缓存击穿",
        "maxmemory-policy; maxmemory; lazyfree-lazy-eviction",
        "REDIS",
        "MB",
    ),
    _subject(
        "redis-cluster-failover",
        "cache",
        "Cache > Redis > Cluster Failover",
        "缓存 > Redis > 集群故障转移",
        "failover; split brain; MOVED redirection",
        "故障转移; 脑裂; MOVED 重定向",
        "cluster-node-timeout; cluster-replica-validity-factor; min-replicas-to-write",
        "RCL",
        "ms",
    ),
    _subject(
        "k8s-crashloopbackoff",
        "kubernetes",
        "Platform > Kubernetes > CrashLoopBackOff",
        "平台 > Kubernetes > 容器反复重启",
        "CrashLoopBackOff; failing liveness probe; init container error",
        "容器反复重启; 存活探针失败; 初始化容器报错",
        "initialDelaySeconds; failureThreshold; restartPolicy",
        "K8S",
        "s",
    ),
    _subject(
        "k8s-oomkilled",
        "kubernetes",
        "Platform > Kubernetes > OOMKilled",
        "平台 > Kubernetes > 内存溢出被杀",
        "OOMKilled; memory limit; heap sizing",
        "内存溢出被杀; 内存上限; 堆内存设置",
        "resources.limits.memory; MaxRAMPercentage; resources.requests.memory",
        "OOM",
        "MiB",
    ),
    _subject(
        "k8s-rolling-update",
        "kubernetes",
        "Platform > Kubernetes > Rolling Update",
        "平台 > Kubernetes > 滚动发布",
        "stuck rollout; readiness gate; surge capacity",
        "发布卡住; 就绪门禁; 扩容余量",
        "maxSurge; maxUnavailable; progressDeadlineSeconds",
        "DEPLOY",
        "%",
    ),
    _subject(
        "k8s-autoscaling",
        "kubernetes",
        "Platform > Kubernetes > Autoscaling",
        "平台 > Kubernetes > 自动扩缩容",
        "scaling flapping; CPU throttling; metrics lag",
        "扩缩容抖动; CPU 限流; 指标延迟",
        "targetCPUUtilizationPercentage; stabilizationWindowSeconds; minReplicas",
        "HPA",
        "%",
    ),
    _subject(
        "kafka-consumer-lag",
        "messaging",
        "Messaging > Kafka > Consumer Lag",
        "消息队列 > Kafka > 消费延迟",
        "consumer lag; partition skew; slow offset commit",
        "消费延迟; 分区倾斜; 位移提交慢",
        "max.poll.records; fetch.min.bytes; enable.auto.commit",
        "KAFKA",
        "records",
    ),
    _subject(
        "kafka-rebalance",
        "messaging",
        "Messaging > Kafka > Consumer Rebalance",
        "消息队列 > Kafka > 消费者重平衡",
        "rebalance storm; session timeout; static membership",
        "频繁重平衡; 会话超时; 静态成员",
        "session.timeout.ms; max.poll.interval.ms; group.instance.id",
        "REBAL",
        "ms",
    ),
    _subject(
        "rocketmq-retry-dlq",
        "messaging",
        "Messaging > RocketMQ > Dead Letter Queue",
        "消息队列 > RocketMQ > 死信队列",
        "retry backlog; dead letter queue; duplicate delivery",
        "重试积压; 死信队列; 重复投递",
        "maxReconsumeTimes; consumeTimeout; delayLevel",
        "MQ",
        "times",
    ),
    _subject(
        "log-retention",
        "observability",
        "Observability > Logging > Retention",
        "可观测性 > 日志 > 保留策略",
        "log retention; index rollover; disk watermark",
        "日志保留; 索引滚动; 磁盘水位",
        "retention_days; rollover_max_size; disk.watermark.high",
        "LOG",
        "days",
    ),
    _subject(
        "alert-runbooks",
        "observability",
        "Observability > Alerting > Runbooks",
        "可观测性 > 告警 > 处理手册",
        "alert fatigue; missing runbook link; flapping alert",
        "告警疲劳; 缺少手册链接; 告警抖动",
        "for_duration; severity; runbook_url",
        "ALERT",
        "min",
    ),
    _subject(
        "tracing-sampling",
        "observability",
        "Observability > Tracing > Sampling",
        "可观测性 > 链路追踪 > 采样",
        "dropped spans; sampling rate; lost trace context",
        "丢失 span; 采样率; 追踪上下文丢失",
        "sampler.ratio; otel.bsp.max.queue.size; traceparent",
        "TRACE",
        "%",
    ),
    _subject(
        "tls-certificates",
        "security",
        "Security > TLS > Certificate Rotation",
        "安全 > TLS > 证书轮换",
        "certificate expiry; handshake failure; incomplete chain",
        "证书过期; 握手失败; 证书链不完整",
        "renewBefore; duration; ssl_protocols",
        "TLS",
        "days",
    ),
    _subject(
        "iam-access-keys",
        "security",
        "Security > IAM > Access Keys",
        "安全 > IAM > 访问密钥",
        "leaked access key; over-broad policy; key rotation",
        "访问密钥泄露; 权限过宽; 密钥轮换",
        "MaxSessionDuration; aws:MultiFactorAuthPresent; iam:PassRole",
        "IAM",
        "h",
    ),
    _subject(
        "dns-resolution",
        "networking",
        "Networking > DNS > Resolution",
        "网络 > DNS > 域名解析",
        "NXDOMAIN spikes; ndots search path; CoreDNS throttling",
        "NXDOMAIN 激增; ndots 搜索路径; CoreDNS 限流",
        "ndots; cache_ttl; max_concurrent",
        "DNS",
        "s",
    ),
    _subject(
        "ingress-timeouts",
        "networking",
        "Networking > Ingress > Timeouts",
        "网络 > 入口网关 > 超时",
        "504 gateway timeout; upstream reset; keepalive mismatch",
        "504 网关超时; 上游连接被重置; 长连接超时不一致",
        "proxy-read-timeout; upstream-keepalive-timeout; proxy-body-size",
        "GW",
        "s",
    ),
    _subject(
        "ci-flaky-tests",
        "ci-cd",
        "Delivery > CI > Flaky Tests",
        "交付 > 持续集成 > 不稳定测试",
        "flaky test; quarantine list; test retries",
        "不稳定测试; 隔离名单; 测试重试",
        "retry_count; timeout_minutes; parallelism",
        "CI",
        "min",
    ),
    _subject(
        "release-rollback",
        "ci-cd",
        "Delivery > Release > Rollback",
        "交付 > 发布 > 回滚",
        "failed canary; rollback plan; feature flag",
        "金丝雀失败; 回滚预案; 功能开关",
        "canary_weight; analysis_interval; max_failed_checks",
        "REL",
        "%",
    ),
    _subject(
        "object-storage-lifecycle",
        "storage",
        "Storage > Object Storage > Lifecycle",
        "存储 > 对象存储 > 生命周期",
        "lifecycle transition; noncurrent versions; storage cost",
        "生命周期转换; 历史版本; 存储成本",
        "NoncurrentDays; TransitionDays; AbortIncompleteMultipartUpload",
        "S3",
        "days",
    ),
    _subject(
        "node-disk-pressure",
        "storage",
        "Storage > Node Disk > Disk Pressure",
        "存储 > 节点磁盘 > 磁盘压力",
        "disk pressure; inode exhaustion; image garbage collection",
        "磁盘压力; inode 耗尽; 镜像垃圾回收",
        "imageGCHighThresholdPercent; evictionHard; ephemeral-storage",
        "DISK",
        "%",
    ),
)

#: (slug, English section, Chinese section)
ASPECTS = (
    ("troubleshooting", "Troubleshooting", "故障排查"),
    ("tuning", "Tuning", "参数调优"),
    ("runbook", "On-call Runbook", "值班手册"),
    ("config", "Configuration", "配置说明"),
    ("limits", "Capacity Limits", "容量上限"),
    ("upgrade", "Upgrade Notes", "升级说明"),
)

SERVICES = (
    "payment-service",
    "order-service",
    "billing-service",
    "search-service",
    "auth-service",
    "inventory-service",
    "notification-service",
    "gateway",
    "ledger-service",
    "recommendation-service",
    "user-profile",
    "report-worker",
)

EN_SENTENCES = (
    "When {service} reports {code}, check {param} first; the current value is {value} {unit}.",
    "The {name} runbook for {service} says to raise {param} only after {term} is confirmed.",
    "{Term} usually follows a deploy: compare the rollout time with the first {code} in the logs.",
    "Keep {param} below {value} {unit} per pod, otherwise {term2} appears under peak load.",
    "Page the owning team of {service} if {term} lasts longer than {small} minutes.",
    "The dashboard '{name} / {service}' plots {term} next to p99 latency, so the link is clear.",
    "Do not restart {service} blindly: capture diagnostics and the {code} samples first.",
    "Since the 2026-Q3 migration, {service} reads {param} from the shared config repository.",
    "A typical symptom is {term2}, followed minutes later by {code} errors at the gateway.",
    "If the fix does not hold, roll back the release and attach the {code} samples to the ticket.",
    "Staging runs with {param} at {value2} {unit}, which hides {term} until production traffic.",
    "Capacity reviews for {service} happen every quarter; the last one set {param} to {value}.",
    "Most {term} incidents in {service} were caused by a config drift, not by a code change.",
    "The alert on {term} fires after {small} minutes above the threshold and links this page.",
    "Measure before tuning: record {term2} for {small} minutes, then change one setting at a time.",
    "For {service}, {param} is owned by the platform team; request changes in the infra channel.",
)

EN_VAGUE = (
    "Check the service dashboards and recent deploys before changing any setting.",
    "Most incidents of this kind resolve after the owning team reviews the recent changes.",
    "Follow the general escalation policy and keep the incident channel updated.",
    "Document what you changed and why, so the next on-call engineer can follow along.",
    "Compare the behaviour in staging and production; differences usually point to config.",
    "Read the linked design document for background on why the service is set up this way.",
    "Ask in the team channel if the steps below do not match what you see.",
    "Keep customer-facing status pages in sync while the investigation is ongoing.",
    "Write a short post-incident note once the service is stable again.",
)

ZH_SENTENCES = (
    "{service} 出现 {code} 时，先检查 {param}，当前取值为 {value} {unit}。",
    "{name}手册要求：确认{term}之后，才能调整 {param}。",
    "{term}通常出现在发布之后，请对比发布时间和日志里第一次出现 {code} 的时间。",
    "每个 Pod 的 {param} 不要超过 {value} {unit}，否则高峰期会出现{term2}。",
    "{service} 的{term}持续超过 {small} 分钟时，需要呼叫负责团队。",
    "监控面板“{name} / {service}”把{term}和 p99 延迟画在一起，便于判断关联。",
    "不要直接重启 {service}，先保存诊断信息和 {code} 的样本。",
    "2026 年第三季度迁移之后，{service} 从共享配置仓库读取 {param}。",
    "常见现象是先出现{term2}，几分钟后网关开始报 {code}。",
    "如果修复没有生效，请回滚版本，并把 {code} 的样本附在工单里。",
    "预发环境的 {param} 是 {value2} {unit}，所以{term}往往到生产流量下才暴露。",
    "{service} 每个季度做一次容量评估，上一次把 {param} 定为 {value}。",
    "{service} 的大多数{term}事故来自配置漂移，而不是代码变更。",
    "{term}告警在超过阈值 {small} 分钟后触发，告警里带有本页链接。",
    "调优之前先测量：记录 {small} 分钟的{term2}，然后每次只改一个参数。",
    "{service} 的 {param} 由平台团队维护，如需修改请在基础设施频道提交申请。",
)

ZH_VAGUE = (
    "修改任何配置之前，先查看服务监控面板和最近的发布记录。",
    "这类问题大多在负责团队检查最近的变更之后就能解决。",
    "请按照通用的升级流程处理，并在事故频道里同步进展。",
    "记录你修改了什么以及原因，方便下一位值班同学接手。",
    "对比预发环境和生产环境的表现，差异通常指向配置问题。",
    "背景信息请参考链接中的设计文档，了解服务为什么这样部署。",
    "如果下面的步骤和你看到的情况不一致，请在团队频道里提问。",
    "排查期间请同步更新对外的状态页面。",
    "服务恢复稳定之后，写一份简短的事故复盘。",
    "变更窗口之外的操作需要先获得值班负责人的同意。",
    "所有临时调整都要在工单里登记，并设置到期时间。",
    "如果影响范围扩大，立即升级为一级事故并通知相关团队。",
    "处理完成后确认告警已经恢复，再关闭事故频道。",
    "不确定时优先保护数据一致性，其次才是恢复速度。",
    "相关的历史事故记录可以在知识库的事故归档里找到。",
)

EN_QUERIES = (
    "How do I fix {term} in {service}?",
    "What should {param} be set to for {service}?",
    "{code} in {service}: what does it mean and what do I do?",
    "Why does {service} show {term} after a deploy?",
    "{name} {section} for {service}",
    "{service} {term}: which setting do I change?",
)

ZH_QUERIES = (
    "{service} 出现{term}怎么处理？",
    "{service} 的 {param} 应该设置成多少？",
    "{code} 是什么错误，{service} 该怎么排查？",
    "为什么 {service} 发布之后会出现{term}？",
    "{name}{section}：{service}",
)

NO_ANSWER_QUERIES = (
    "What is the lunch menu in the Berlin office this week?",
    "How do I book a meeting room for the offsite?",
    "Who won the company hackathon in 2019?",
    "What is the parental leave policy for contractors?",
    "公司年会在哪里举办？",
    "报销出差费用需要哪些发票？",
    "What is the Wi-Fi password in the guest lounge?",
)

RERANKERS = ("bge-reranker-v2-m3", "cross-encoder-ms-marco-v2")


@dataclass(frozen=True, slots=True)
class Document:
    """One document of the simulated knowledge base."""

    source: str
    doc_id: str
    title: str
    breadcrumb: str
    language: str
    subject: Subject
    section: str
    service: str
    code: str

    @property
    def keywords(self) -> tuple[str, ...]:
        """Discriminating terms a golden case may expect in the text."""
        terms = self.subject.zh_terms if self.language == "zh" else self.subject.en_terms
        return (self.code, self.subject.params[0], terms[0])


def build_documents(rng: random.Random) -> list[Document]:
    """Every subject x aspect x service; about a third of them in Chinese."""
    documents = []
    for subject in SUBJECTS:
        for aspect, en_section, zh_section in ASPECTS:
            for service in SERVICES:
                zh = rng.random() < 0.3
                source = f"{subject.slug}-{aspect}-{service}" + ("-zh" if zh else "")
                path = subject.zh_path if zh else subject.en_path
                section = zh_section if zh else en_section
                title = (
                    f"{subject.zh_name}{section}（{service}）"
                    if zh
                    else f"{subject.en_name} {section} ({service})"
                )
                documents.append(
                    Document(
                        source=source,
                        doc_id=f"doc-{source}",
                        title=title,
                        breadcrumb=" > ".join((*path, section, service)),
                        language="zh" if zh else "en",
                        subject=subject,
                        section=section,
                        service=service,
                        code=f"{subject.code_prefix}-{rng.randint(1000, 9999)}",
                    )
                )
    return documents


# --------------------------------------------------------------------------- generation


def _fill(template: str, doc: Document, rng: random.Random) -> str:
    subject = doc.subject
    zh = doc.language == "zh"
    terms = subject.zh_terms if zh else subject.en_terms
    term, term2 = rng.sample(terms, 2)
    return template.format(
        service=doc.service,
        code=doc.code,
        param=rng.choice(subject.params),
        value=rng.choice((8, 12, 16, 20, 30, 45, 60, 120, 300, 1500, 3000)),
        value2=rng.choice((4, 10, 25, 100)),
        small=rng.choice((3, 5, 10, 15)),
        unit=subject.unit,
        name=subject.zh_name if zh else subject.en_name,
        term=term,
        Term=term[:1].upper() + term[1:],
        term2=term2,
    )


def block_text(doc: Document, rng: random.Random, *, vague: bool = False) -> str:
    """300-600 characters of runbook-style prose about ``doc``.

    A regular chunk opens with a sentence that names all of the document's
    keywords; a ``vague`` chunk never names them.
    """
    zh = doc.language == "zh"
    sep = "" if zh else " "
    target = rng.randint(300, 600)
    parts: list[str] = []
    if vague:
        pool = list(ZH_VAGUE if zh else EN_VAGUE)
        rng.shuffle(pool)
        while len(sep.join(parts)) < target:
            parts.append(pool[len(parts) % len(pool)])
    else:
        code, param, term = doc.keywords
        parts.append(
            f"{doc.subject.zh_name}（{doc.service}）：{term}对应错误码 {code}，由 {param} 控制。"
            if zh
            else f"{doc.subject.en_name} in {doc.service}: {term} shows up as {code} "
            f"and is governed by {param}."
        )
        templates = ZH_SENTENCES if zh else EN_SENTENCES
        while len(sep.join(parts)) < target:
            parts.append(_fill(rng.choice(templates), doc, rng))
    text = sep.join(parts)
    return text if len(text) <= 600 else text[:597].rstrip() + "..."


def _score_label(score: float) -> str:
    return "high" if score >= 0.7 else "medium" if score >= 0.45 else "low"


def make_block(
    rank: int, doc: Document, score: float, rng: random.Random, *, vague: bool = False
) -> dict[str, Any]:
    """One evidence block of ``doc``; a vague chunk also lost its breadcrumb."""
    text = block_text(doc, rng, vague=vague)
    return {
        "rank": rank,
        "chunkId": f"{doc.source}#c{rng.randint(0, 40)}",
        "docId": doc.doc_id,
        "source": doc.source,
        "title": doc.title,
        "breadcrumb": None if vague else doc.breadcrumb,
        "text": text,
        "score": score,
        "scoreLabel": _score_label(score),
        "metadata": {
            "lang": doc.language,
            "section": doc.section,
            "updatedAt": f"2026-{rng.randint(1, 11):02d}-{rng.randint(1, 28):02d}",
            "tokens": len(text) // (2 if doc.language == "zh" else 4),
        },
    }


def refresh_lookup(lookup: dict[str, Any]) -> None:
    """Renumber ranks and derive the context pack and the rerank ``after`` list."""
    blocks = lookup["evidenceBlocks"]
    for rank, item in enumerate(blocks, start=1):
        item["rank"] = rank
    packed: list[dict[str, Any]] = []
    size = 0
    for item in blocks:
        if size + len(item["text"]) > CONTEXT_BUDGET:
            break
        packed.append(item)
        size += len(item["text"]) + 2
    text = "\n\n".join(item["text"] for item in packed)
    lookup["contextPack"] = {
        "sources": list(dict.fromkeys(item["source"] for item in packed)),
        "text": text,
        "charCount": len(text),
        "budgetChars": CONTEXT_BUDGET,
        "truncated": len(packed) < len(blocks),
    }
    rerank = lookup["rerankTrace"]
    ranked = [
        {"chunkId": item["chunkId"], "source": item["source"], "score": item["score"]}
        for item in blocks
    ]
    rerank["after"] = ranked if rerank["applied"] else list(rerank["before"])


def _trace(
    rng: random.Random, category: str, hits: int, fallback: bool, top: float | None
) -> dict[str, Any]:
    filtered: dict[str, Any] = {
        "name": "filtered",
        "filter": {"kbScope": KB_SCOPE, "category": category},
        "method": "hybrid",
        "hitCount": hits,
        "topScore": top,
        "latencyMs": round(rng.uniform(8, 60), 2),
        "skipped": False,
        "reason": None,
    }
    trace: dict[str, Any] = {}
    if rng.random() < 0.5:
        trace["l0Hints"] = {"category": category, "confidence": round(rng.uniform(0.4, 1), 3)}
    if fallback:
        filtered.update(hitCount=rng.randint(0, 2), topScore=None, reason="too few hits")
        unfiltered = {
            "name": "unfiltered",
            "filter": {"kbScope": KB_SCOPE},
            "method": "hybrid",
            "hitCount": hits,
            "topScore": top,
            "latencyMs": round(rng.uniform(20, 120), 2),
            "skipped": False,
            "reason": None,
        }
        trace["attempts"] = [filtered, unfiltered]
        trace["selectedAttempt"] = "unfiltered"
        trace["fallbackReasons"] = ["filtered attempt returned too few hits"]
    else:
        trace["attempts"] = [filtered]
        trace["selectedAttempt"] = "filtered"
        trace["fallbackReasons"] = []
    if hits == 0:
        trace["evidenceStatus"] = "none"
    elif top is not None and top >= 0.45:
        trace["evidenceStatus"] = "sufficient"
    else:
        trace["evidenceStatus"] = "weak"
    if rng.random() < 0.5:
        trace["fusion"] = {"method": "rrf", "k": 60}
    return trace


def make_fixture(
    case: dict[str, Any],
    blocks: list[dict[str, Any]],
    category: str,
    fallback: bool,
    rerank_applied: bool,
    rng: random.Random,
) -> dict[str, Any]:
    """A fixture around ``blocks``: traces, context pack, reranking."""
    before = [
        {
            "chunkId": item["chunkId"],
            "source": item["source"],
            "score": round(rng.uniform(0.2, 0.9), 4),
        }
        for item in blocks
    ]
    if rerank_applied and len(before) > 2:
        for _ in range(3):
            i, j = rng.sample(range(len(before)), 2)
            before[i], before[j] = before[j], before[i]
    top = blocks[0]["score"] if blocks else None
    lookup: dict[str, Any] = {
        "evidenceBlocks": blocks,
        "contextPack": {},
        "retrievalTrace": _trace(rng, category, len(blocks), fallback, top),
        "rerankTrace": {
            "applied": rerank_applied,
            "reranker": rng.choice(RERANKERS) if rerank_applied else None,
            "before": before,
            "after": [],
        },
    }
    refresh_lookup(lookup)
    return {
        "schemaVersion": 1,
        "caseId": case["id"],
        "query": case["query"],
        "retrievedAt": f"2026-11-{rng.randint(1, 28):02d}T{rng.randint(0, 23):02d}:"
        f"{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}Z",
        "generator": {
            "backend": "milvus",
            "embedder": {
                "kind": "sentence-transformers",
                "model": "BAAI/bge-m3",
                "revision": "5617a9f",
                "dimension": 1024,
            },
            "pipelineVersion": "retrieval/2.3.1",
            "kbScope": KB_SCOPE,
            "topK": max(10, case.get("topK", DEFAULT_TOP_K)),
        },
        "lookupResult": lookup,
    }


def _scores(rng: random.Random, count: int, top: float) -> list[float]:
    scores, score = [], top
    for _ in range(count):
        scores.append(round(score, 4))
        score = max(0.05, score - rng.uniform(0.005, 0.06))
    return scores


def _decoys(
    doc: Document, by_subject: dict[str, list[Document]], documents: list[Document]
) -> Callable[[random.Random], Document]:
    siblings = [d for d in by_subject[doc.subject.slug] if d.source != doc.source]

    def pick(rng: random.Random) -> Document:
        while True:
            decoy = rng.choice(siblings) if rng.random() < 0.5 else rng.choice(documents)
            if decoy.source != doc.source:
                return decoy

    return pick


def make_pair(
    index: int,
    rng: random.Random,
    documents: list[Document],
    by_subject: dict[str, list[Document]],
    n_blocks: int,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """One golden case and its fixture, with a realistic outcome."""
    split = "dev" if rng.random() < 0.6 else "test"
    if rng.random() < 0.05:
        return _no_answer_pair(index, rng, documents, split, n_blocks)

    doc = rng.choice(documents)
    subject = doc.subject
    zh = doc.language == "zh"
    terms = subject.zh_terms if zh else subject.en_terms
    query = rng.choice(ZH_QUERIES if zh else EN_QUERIES).format(
        service=doc.service,
        term=rng.choice(terms),
        param=rng.choice(subject.params),
        code=doc.code,
        name=subject.zh_name if zh else subject.en_name,
        section=doc.section,
    )
    case: dict[str, Any] = {
        "id": f"{subject.slug}-{index:05d}",
        "query": query,
        "language": doc.language,
        "category": subject.category,
        "split": split,
    }
    if rng.random() < 0.1:
        case["topK"] = rng.choice((3, 10))
    top_k = case.get("topK", DEFAULT_TOP_K)
    if rng.random() < 0.08:
        case["minHitLevel"] = "strong"

    sibling = rng.choice([d for d in by_subject[subject.slug] if d.source != doc.source])
    if rng.random() < 0.85:
        case["expectedSources"] = [doc.source]
        if rng.random() < 0.1:
            case["expectedSources"].append(sibling.source)
    if "expectedSources" not in case or rng.random() < 0.3:
        case["expectedDocIds"] = [doc.doc_id]
    if rng.random() < 0.5:
        depth = rng.randint(2, 4)
        case["expectedBreadcrumbs"] = [" > ".join(doc.breadcrumb.split(" > ")[:depth])]
    if rng.random() < 0.6:
        case["expectedKeywords"] = rng.sample(doc.keywords, rng.randint(1, 3))

    # What the retrieval service actually did for this case.
    outcome = rng.choices(("hit", "partial", "buried", "absent"), weights=(90, 4, 3.5, 2.5), k=1)[0]
    fallback = rng.random() < 0.12
    rerank_applied = rng.random() < 0.95
    pick = _decoys(doc, by_subject, documents)
    scores = _scores(rng, n_blocks, rng.uniform(0.55, 0.95))
    docs = [pick(rng) for _ in range(n_blocks)]
    expected_at: int | None = None
    if outcome in ("hit", "partial"):
        expected_at = rng.choices((0, 1, 2, 3, 4), weights=(65, 18, 9, 5, 3), k=1)[0]
        expected_at = min(expected_at, top_k - 1, n_blocks - 1)
    elif outcome == "buried":
        expected_at = rng.randint(min(top_k, n_blocks - 1), n_blocks - 1)
    if expected_at is not None:
        docs[expected_at] = doc
        if expected_at + 2 < n_blocks and rng.random() < 0.3:
            docs[rng.randint(expected_at + 1, n_blocks - 1)] = doc
    blocks = [
        make_block(rank, d, scores[rank - 1], rng, vague=outcome == "partial" and d is doc)
        for rank, d in enumerate(docs, start=1)
    ]
    fixture = make_fixture(case, blocks, subject.category, fallback, rerank_applied, rng)
    trace = fixture["lookupResult"]["retrievalTrace"]

    # Pipeline expectations: mostly what happened, occasionally not (a real failure).
    def truth_or_not(true: Any, other: Any) -> Any:
        return true if rng.random() < 0.96 else other

    if rng.random() < 0.2:
        case["expectedSelectedAttempt"] = truth_or_not(
            trace["selectedAttempt"],
            "filtered" if trace["selectedAttempt"] == "unfiltered" else "unfiltered",
        )
    if rng.random() < 0.1:
        case["expectedEvidenceStatus"] = truth_or_not(trace["evidenceStatus"], "sufficient")
    if fallback and rng.random() < 0.3:
        case["expectedFallbackReason"] = trace["fallbackReasons"][0]
    elif rng.random() < 0.02:
        case["expectedFallbackReasons"] = truth_or_not(
            trace["fallbackReasons"], ["filtered attempt returned too few hits"]
        )
    if "expectedSources" in case and rng.random() < 0.05:
        case["expectedContextSources"] = [doc.source]
    if "expectedSources" in case and rerank_applied and rng.random() < 0.08:
        after = fixture["lookupResult"]["rerankTrace"]["after"]
        case["expectedRerankTopSource"] = truth_or_not(after[0]["source"], doc.source)
    if rng.random() < 0.4:
        case["tags"] = rng.sample(
            [subject.slug.split("-")[0], doc.service, "regression", "p1", "smoke"],
            rng.randint(1, 3),
        )
    if rng.random() < 0.05:
        case["notes"] = f"Added after incident review for {doc.service}."
    if rng.random() < 0.002:  # someone edited the query but never re-snapshotted
        fixture["query"] = query + " (old wording)"
    return case, fixture


def _no_answer_pair(
    index: int, rng: random.Random, documents: list[Document], split: str, n_blocks: int
) -> tuple[dict[str, Any], dict[str, Any]]:
    query = rng.choice(NO_ANSWER_QUERIES)
    zh = any("\u4e00" <= ch <= "\u9fff" for ch in query)
    case: dict[str, Any] = {
        "id": f"no-answer-{index:05d}",
        "query": query,
        "language": "zh" if zh else "en",
        "category": "out-of-scope",
        "split": split,
        "noAnswer": True,
    }
    if rng.random() < 0.3:
        case["expectedEvidenceStatus"] = "none"
    blocks: list[dict[str, Any]] = []
    if rng.random() < 0.2:  # a false positive: the service returned low-score evidence
        scores = _scores(rng, n_blocks, rng.uniform(0.2, 0.4))
        blocks = [
            make_block(rank, rng.choice(documents), scores[rank - 1], rng)
            for rank in range(1, n_blocks + 1)
        ]
    fixture = make_fixture(case, blocks, "out-of-scope", True, bool(blocks), rng)
    return case, fixture


def write_json(path: Path, data: Any) -> None:
    """Pretty-printed JSON as a user's repository would hold it."""
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def generate(n_cases: int, n_blocks: int, seed: int) -> list[dict[str, Any]]:
    """Write the cases file and the fixtures in the current folder; return the cases."""
    rng = random.Random(seed)
    documents = build_documents(rng)
    by_subject: dict[str, list[Document]] = {}
    for doc in documents:
        by_subject.setdefault(doc.subject.slug, []).append(doc)
    CASES_FILE.parent.mkdir(parents=True, exist_ok=True)
    FIXTURES_DIR.mkdir(parents=True, exist_ok=True)
    cases = []
    for index in range(n_cases):
        case, fixture = make_pair(index, rng, documents, by_subject, n_blocks)
        cases.append(case)
        write_json(FIXTURES_DIR / f"{case['id']}.json", fixture)
    write_json(
        CASES_FILE,
        {
            "schemaVersion": 1,
            "description": f"Synthetic benchmark set: {n_cases} cases, seed {seed}.",
            "defaults": {"kbScope": KB_SCOPE, "topK": DEFAULT_TOP_K, "minHitLevel": "medium"},
            "cases": cases,
        },
    )
    return cases


# --------------------------------------------------------------------------- perturbation


def _expected_index(case: dict[str, Any], blocks: list[dict[str, Any]]) -> int | None:
    sources, doc_ids = set(case.get("expectedSources", ())), set(case.get("expectedDocIds", ()))
    for index, item in enumerate(blocks):
        if item["source"] in sources or item.get("docId") in doc_ids:
            return index
    return None


def perturb(cases: list[dict[str, Any]], seed: int, share: float = 0.02) -> dict[str, int]:
    """Make ~``share`` of the answerable cases worse, and a few failing ones better.

    Returns how many fixtures got each kind of change.
    """
    rng = random.Random(seed + 1)
    answerable = [c for c in cases if not c.get("noAnswer")]
    chosen = rng.sample(answerable, round(len(cases) * share))
    counts = {"demoted": 0, "slipped": 0, "fallback": 0, "rerank-off": 0, "recovered": 0}
    for case in chosen:
        path = FIXTURES_DIR / f"{case['id']}.json"
        fixture = json.loads(path.read_text(encoding="utf-8"))
        lookup = fixture["lookupResult"]
        blocks = lookup["evidenceBlocks"]
        top_k = case.get("topK", DEFAULT_TOP_K)
        at = _expected_index(case, blocks)
        kind = rng.choices(("demote", "slip", "fallback", "rerank-off"), (45, 25, 15, 15))[0]
        slip_to = None if at is None else min(at + 2, len(blocks) - 1, top_k - 1)
        if kind == "demote" and (at is None or at >= top_k):
            kind = "fallback"
        if kind == "slip" and (at is None or slip_to is None or slip_to <= at):
            kind = "fallback"
        if kind == "demote":
            sources = set(case.get("expectedSources", ()))
            doc_ids = set(case.get("expectedDocIds", ()))
            hit = [b for b in blocks if b["source"] in sources or b.get("docId") in doc_ids]
            rest = [b for b in blocks if b not in hit]
            lookup["evidenceBlocks"] = blocks = rest + hit
            counts["demoted"] += 1
        elif kind == "slip" and at is not None and slip_to is not None:
            blocks.insert(slip_to, blocks.pop(at))
            counts["slipped"] += 1
        elif kind == "fallback":
            trace = lookup["retrievalTrace"]
            trace["selectedAttempt"] = "unfiltered"
            trace["fallbackReasons"] = ["category filter matched no documents"]
            counts["fallback"] += 1
        else:
            lookup["rerankTrace"].update(applied=False, reranker=None)
            counts["rerank-off"] += 1
        refresh_lookup(lookup)
        write_json(path, fixture)

    # A few cases that failed because their document was ranked too low now pass.
    recovered = 0
    chosen_ids = {case["id"] for case in chosen}
    for case in rng.sample(answerable, len(answerable)):
        if recovered >= max(1, len(cases) // 400):
            break
        if case["id"] in chosen_ids:
            continue
        path = FIXTURES_DIR / f"{case['id']}.json"
        fixture = json.loads(path.read_text(encoding="utf-8"))
        blocks = fixture["lookupResult"]["evidenceBlocks"]
        at = _expected_index(case, blocks)
        if at is not None and at >= case.get("topK", DEFAULT_TOP_K):
            blocks.insert(0, blocks.pop(at))
            refresh_lookup(fixture["lookupResult"])
            write_json(path, fixture)
            recovered += 1
    counts["recovered"] = recovered
    return counts


# --------------------------------------------------------------------------- timing


def score_argv(json_report: Path, markdown_report: Path) -> list[str]:
    """``ragsnap score`` of the eval set, writing the two reports."""
    return [
        "score",
        "--cases",
        str(CASES_FILE),
        "--fixtures",
        str(FIXTURES_DIR),
        "--json-report",
        str(json_report),
        "--markdown-report",
        str(markdown_report),
        "--allow-outside",  # the eval set lives in a temporary work folder
    ]


def ragsnap_argv() -> list[str]:
    """``ragsnap score`` with every report and the baseline diff."""
    return [
        *score_argv(REPORTS_DIR / "current.json", REPORTS_DIR / "current.md"),
        "--compare-to",
        str(BASE_JSON),
        "--diff-json-report",
        str(REPORTS_DIR / "baseline-diff.json"),
        "--diff-markdown-report",
        str(REPORTS_DIR / "baseline-diff.md"),
    ]


def call_ragsnap(argv: Sequence[str]) -> tuple[int, str, str]:
    """Run ``ragsnap.cli.main`` in-process; return the exit code, stdout and stderr."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = ragsnap_main(list(argv))
    return code, out.getvalue(), err.getvalue()


def run_ragsnap() -> None:
    """The timed ragsnap side; a regression must make it exit 1 (2 would be an error)."""
    code, _, err = call_ragsnap(ragsnap_argv())
    if code != 1:
        raise SystemExit(f"ragsnap score exited {code}, expected 1:\n{err}")


def run_peer(paths: Sequence[str]) -> int:
    """orjson alone: each input file's bytes (one read) parsed with ``orjson.loads``,
    each result dropped; return the count (the old peer, for information)."""
    loads = orjson.loads
    count = 0
    for path in paths:
        with open(path, "rb") as handle:  # noqa: PTH123 - the plain-Python peer
            loads(handle.read())
        count += 1
    return count


#: The floor as a script of its own (the whole-process side): ``python FLOOR CASES_FILE
#: FIXTURES_DIR SCHEMAS_DIR``. The same work as ``run_floor``, with the folder listed.
FLOOR_SCRIPT = """
import hashlib, os, sys
import jsonschema_rs, orjson

cases, folder, schemas = sys.argv[1:4]
def validator(name):
    with open(os.path.join(schemas, name + ".schema.json"), "rb") as handle:
        return jsonschema_rs.Draft7Validator(orjson.loads(handle.read())).is_valid
with os.scandir(folder) as entries:
    names = sorted(e.name for e in entries if e.name.endswith(".json"))
cases_valid, fixture_valid = validator("golden-cases"), validator("fixture")
jobs = [(cases, cases_valid)] + [(os.path.join(folder, n), fixture_valid) for n in names]
total = hashlib.sha256()
for path, valid in jobs:
    with open(path, "rb") as handle:
        raw = handle.read()
    own = hashlib.sha256(raw)
    total.update(path.encode() + own.digest())
    if not valid(orjson.loads(raw)):
        raise SystemExit(path + ": invalid")
print(total.hexdigest())
"""


def floor_validators() -> tuple[Any, Any]:
    """The compiled validators ragsnap itself uses (``ragsnap.io.schema``: jsonschema-rs,
    Draft 7, the package's schema files) for the golden cases file and a fixture."""
    import jsonschema_rs

    from ragsnap.io.schema import load_schema

    return (
        jsonschema_rs.Draft7Validator(load_schema("golden-cases")).is_valid,
        jsonschema_rs.Draft7Validator(load_schema("fixture")).is_valid,
    )


def run_floor(paths: Sequence[str], validators: tuple[Any, Any]) -> int:
    """The floor: what any tool giving ragsnap's guarantees on the inputs must do, done
    the fastest way this machine has: each file read (one ``read``), hashed
    (``hashlib.sha256``, the digests ragsnap records), parsed (``orjson.loads``) and
    validated against its JSON Schema (jsonschema-rs ``is_valid``, the compiled
    validator ragsnap uses); each result dropped. Return the count."""
    loads, sha256 = orjson.loads, hashlib.sha256
    cases_valid, fixture_valid = validators
    total = sha256()
    count = 0
    for path in paths:
        with open(path, "rb") as handle:  # noqa: PTH123 - the plain-Python floor
            raw = handle.read()
        own = sha256(raw)
        total.update(path.encode() + own.digest())
        if not (cases_valid if count == 0 else fixture_valid)(loads(raw)):
            raise SystemExit(f"{path}: invalid, the floor needs valid inputs")
        count += 1
    return count


#: The wrapper each timed process runs under: ``python PEAK -m MODULE ARGS`` or
#: ``python PEAK SCRIPT ARGS``; it prints the process's own peak RSS (``VmHWM``,
#: which starts afresh at exec, unlike ``ru_maxrss`` of a forked child) on stderr.
PEAK_SCRIPT = """
import atexit, runpy, sys

def peak():
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                sys.stderr.write("PEAK_KIB " + line.split()[1] + "\\n")
atexit.register(peak)
if sys.argv[1] == "-m":
    sys.argv = sys.argv[2:]
    runpy.run_module(sys.argv[0], run_name="__main__", alter_sys=True)
else:
    sys.argv = sys.argv[1:]
    runpy.run_path(sys.argv[0], run_name="__main__")
"""


@dataclass(slots=True)
class Sample:
    """One timed run: wall-clock, thread CPU, process CPU seconds, peak RSS (MiB)."""

    wall: float
    thread: float
    cpu: float
    rss: float


def reset_peak() -> bool:
    """Reset this process's ``VmHWM`` (``clear_refs`` 5); whether that worked."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        return False
    return True


def timed_in_process(func: Callable[[], object]) -> Sample:
    """``func`` in this process after a full garbage collection: wall, thread and
    process CPU, and the process's peak RSS during it (reset before, when possible)."""
    gc.collect()
    reset_peak()
    start, thread, cpu = time.perf_counter(), time.thread_time(), time.process_time()
    func()
    wall = time.perf_counter() - start
    return Sample(wall, time.thread_time() - thread, time.process_time() - cpu, peak_rss_mb())


def timed_process(argv: Sequence[str], expected: int) -> Sample:
    """``argv`` under ``PEAK_SCRIPT`` as its own process: wall, its CPU (user + system,
    from ``wait4``; "thread" is the same figure) and its own peak RSS."""
    peak_script = Path("peak_rss.py")
    command = [sys.executable, str(peak_script), *argv]
    start = time.perf_counter()
    with subprocess.Popen(
        command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    ) as child:
        assert child.stderr is not None
        err = child.stderr.read()
        _, status, usage = os.wait4(child.pid, 0)
        child.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - start
    if child.returncode != expected:
        raise SystemExit(f"{' '.join(argv[:3])} exited {child.returncode}:\n{err}")
    peak = next(
        (int(line.split()[1]) / 1024 for line in err.splitlines() if line.startswith("PEAK_KIB")),
        float("nan"),
    )
    cpu = usage.ru_utime + usage.ru_stime
    return Sample(wall, cpu, cpu, peak)


# --------------------------------------------------------------------------- driver


@dataclass(frozen=True, slots=True)
class Settings:
    """What determines the generated eval set; stored in the manifest."""

    generator: int
    cases: int
    blocks: int
    seed: int


def prepare(settings: Settings) -> None:
    """Generate the eval set, write the baseline and perturb (unless already done)."""
    if MANIFEST.is_file() and json.loads(MANIFEST.read_text("utf-8")) == asdict(settings):
        print(f"Reusing the eval set in {Path.cwd()} (same settings).")
        return
    MANIFEST.unlink(missing_ok=True)
    for folder in (CASES_FILE.parent, FIXTURES_DIR, REPORTS_DIR):
        shutil.rmtree(folder, ignore_errors=True)
    started = time.perf_counter()
    cases = generate(settings.cases, settings.blocks, settings.seed)
    print(f"Generated {len(cases)} cases in {time.perf_counter() - started:.1f} s.")
    code, out, err = call_ragsnap(score_argv(BASE_JSON, BASE_MD))
    if code not in (0, 1):
        raise SystemExit(f"writing the baseline failed (exit {code}):\n{err}")
    print(f"Baseline: {out.splitlines()[0]}")
    counts = perturb(cases, settings.seed)
    print("Perturbed fixtures: " + ", ".join(f"{v} {k}" for k, v in counts.items()))
    MANIFEST.write_text(json.dumps(asdict(settings)) + "\n", encoding="utf-8")


#: functions whose cumulative time the profile lists as the shares of a ragsnap run
PROFILE_SHARES = (
    ("reading, validating, hashing, scoring the fixtures (streamed)", "score_stream"),
    ("  of which score_case", "score_case"),
    ("  of which orjson.loads", "<orjson.loads>"),
    ("  of which SHA-256", "<built-in method _hashlib.openssl_sha256>"),
    ("  of which jsonschema-rs", "<method 'is_valid' of 'jsonschema_rs.Validator' objects>"),
    ("  of which the models (Fixture.from_json)", "from_json"),
    ("  of which typed decoding into the models (ragsnap.io.decode)", "decode_typed"),
    ("    of which msgspec", "<method 'decode' of 'msgspec.json.Decoder' objects>"),
    ("label checks (commands/_labels.py)", "check_labels_before_scoring"),
    ("  of which the privacy scan", "check_privacy"),
    ("provenance check", "check_fixture_digests"),
    ("build_report", "build_report"),
    ("diff (diff_with_config, stage attribution included)", "diff_with_config"),
    ("  of which stage attribution (commands/_forensics.py)", "attribute"),
    ("Markdown (score + diff)", "render_markdown"),
    ("writing the reports (round_floats + orjson.dumps + fsync)", "write_outputs"),
    ("  of which round_floats", "round_floats"),
)


def print_profile_shares(stats: pstats.Stats, total: float) -> None:
    """The cumulative time of each ``PROFILE_SHARES`` function, and its share of ``total``."""
    table: dict[Any, Any] = stats.stats  # type: ignore[attr-defined]
    print(f"\nShares of the profiled run ({total:.3f} s under cProfile):")
    for label, name in PROFILE_SHARES:
        cumulative = max(
            (
                value[3]
                for (_, _, function), value in table.items()
                if function == name or (name.startswith("<") and function == name[1:-1])
            ),
            default=0.0,
        )
        print(f"  {label:<62} {cumulative:7.3f} s  {cumulative / total:6.1%}")


#: the score command's steps ``--phases`` times (names in ``ragsnap.commands.score``; the
#: ones a checkout lacks are left out, so an older checkout can be timed the same way)
PHASES = (
    "load_cases_document",
    "load_fixtures",
    "score_stream",
    "score_report",
    "load_report",
    "load_baseline",
    "check_labels_before_scoring",
    "check_fixtures",
    "check_fixture_digests",
    "case_metrics",
    "graded_metrics",
    "build_report",
    "diff_with_config",
    "render_markdown",
    "render_diff_markdown",
    "write_outputs",
)


def print_phases(runs: int = 3) -> None:
    """The thread CPU of each ``PHASES`` step of the score command (and of the privacy
    scan inside the label checks), each wrapped in place, no profiler; the run with the
    least total of ``runs``."""
    import ragsnap.commands._labels as labels
    import ragsnap.commands.score as command

    spent: dict[str, float] = {}

    def timed_step(label: str, func: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(func)
        def step(*args: Any, **kwargs: Any) -> Any:
            start = time.thread_time()
            try:
                return func(*args, **kwargs)
            finally:
                spent[label] = spent.get(label, 0.0) + time.thread_time() - start

        return step

    wrapped = [(command, name) for name in PHASES if hasattr(command, name)]
    wrapped += [(labels, "check_privacy")] if hasattr(labels, "check_privacy") else []
    originals = [(module, name, getattr(module, name)) for module, name in wrapped]
    for module, name, func in originals:
        setattr(module, name, timed_step(name, func))
    best: tuple[float, dict[str, float]] | None = None
    try:
        for _ in range(runs):
            spent.clear()
            gc.collect()
            start = time.thread_time()
            run_ragsnap()
            total = time.thread_time() - start
            if best is None or total < best[0]:
                best = (total, dict(spent))
    finally:
        for module, name, func in originals:
            setattr(module, name, func)
    assert best is not None
    total, steps = best
    print(f"\nThread CPU of each step of one ragsnap run (least total of {runs}): {total:.3f} s")
    order = [n for n in PHASES if n in steps]
    if "check_privacy" in steps:  # listed under the label checks that run it
        order.insert(order.index("check_labels_before_scoring") + 1, "check_privacy")
    for name in order:
        label = "  of which the privacy scan" if name == "check_privacy" else name
        print(f"  {label:<38} {steps[name]:7.3f} s  {steps[name] / total:6.1%}")
    rest = total - sum(v for k, v in steps.items() if k != "check_privacy")
    print(f"  {'the rest (scoring loop, freeing, glue)':<38} {rest:7.3f} s  {rest / total:6.1%}")


def median(samples: Sequence[Sample], field: str) -> float:
    """The median of one field over ``samples``."""
    return float(statistics.median(getattr(sample, field) for sample in samples))


def benchmark(repeat: int, profile: bool, processes: bool, seed: int, phases: bool) -> bool:
    """Warm up, time the sides interleaved in random order, print the table (and the
    profile). Returns whether every target is met, judged on CPU time."""
    fixture_paths = sorted(FIXTURES_DIR.glob("*.json"))
    paths = [str(path) for path in (CASES_FILE, *fixture_paths)]
    total_mb = sum(Path(path).stat().st_size for path in paths) / 1e6
    validators = floor_validators()
    Path("floor.py").write_text(FLOOR_SCRIPT, encoding="utf-8")
    Path("peak_rss.py").write_text(PEAK_SCRIPT, encoding="utf-8")
    from ragsnap.io import schema

    schemas = str(Path(schema.__file__).parent / "schemas")

    # Untimed warm-up of each side: fills the file cache; the first ragsnap call also
    # imports the score command and compiles the schemas.
    load_before = os.getloadavg()
    start = time.perf_counter()
    run_ragsnap()
    first = time.perf_counter() - start
    in_process: dict[str, Callable[[], object]] = {
        "floor": lambda: run_floor(paths, validators),
        "orjson": lambda: run_peer(paths),
        "ragsnap": run_ragsnap,
    }
    as_process: dict[str, tuple[list[str], int]] = {
        "floor process": (["floor.py", str(CASES_FILE), str(FIXTURES_DIR), schemas], 0),
        "ragsnap process": (["-m", "ragsnap", *ragsnap_argv()], 1),
    }
    sides: dict[str, Callable[[], Sample]] = {
        name: functools.partial(timed_in_process, func) for name, func in in_process.items()
    }
    if processes:
        for name, (argv, code) in as_process.items():
            sides[name] = functools.partial(timed_process, argv, code)
    for func in in_process.values():
        func()
    samples: dict[str, list[Sample]] = {name: [] for name in sides}
    rng = random.Random(seed)
    for _ in range(repeat):
        order = list(sides)
        rng.shuffle(order)
        for name in order:
            samples[name].append(sides[name]())
    load_after = os.getloadavg()

    wall = {name: median(values, "wall") for name, values in samples.items()}
    thread = {name: median(values, "thread") for name, values in samples.items()}
    cpu = {name: median(values, "cpu") for name, values in samples.items()}
    rss = {name: max(s.rss for s in values) for name, values in samples.items()}
    verdicts: list[tuple[str, float, float, str]] = [
        ("in process, CPU", cpu["ragsnap"] / cpu["floor"], TARGET_IN_PROCESS, "x floor"),
    ]
    if processes:
        verdicts += [
            (
                "whole processes, CPU",
                cpu["ragsnap process"] / cpu["floor process"],
                TARGET_PROCESSES,
                "x floor",
            ),
            ("peak RSS of the ragsnap process", rss["ragsnap process"], TARGET_RSS_MIB, "MiB"),
        ]
    diff = json.loads((REPORTS_DIR / "baseline-diff.json").read_text("utf-8"))
    summary = json.loads((REPORTS_DIR / "current.json").read_text("utf-8"))["summary"]

    print()
    print(f"score_10k: {len(fixture_paths):,} cases, {repeat} rounds, sides in random order")
    header = ("side", "wall median", "wall min", "thread CPU", "process CPU", "peak RSS")
    print("| " + " | ".join(header) + " |")
    print("|---|--:|--:|--:|--:|--:|")
    for name, values in samples.items():
        print(
            f"| {name} | {wall[name]:.3f} s | {min(s.wall for s in values):.3f} s | "
            f"{thread[name]:.3f} s | {cpu[name]:.3f} s | {rss[name]:.0f} MiB |"
        )
    ratios = [("ragsnap / floor, in process", "ragsnap", "floor")]
    ratios.append(("ragsnap / orjson alone, in process (information)", "ragsnap", "orjson"))
    if processes:
        ratios.append(("ragsnap / floor, whole processes", "ragsnap process", "floor process"))
    for label, top, bottom in ratios:
        print(
            f"{label}: wall {wall[top] / wall[bottom]:.2f} x, thread CPU "
            f"{thread[top] / thread[bottom]:.2f} x, process CPU {cpu[top] / cpu[bottom]:.2f} x"
        )
    passed = True
    for label, value, target, unit in verdicts:
        ok = value <= target
        passed &= ok
        print(f"Target {label}: {value:.2f} {unit} <= {target:g}: {'PASS' if ok else 'FAIL'}")
    print(
        "Floor: read + SHA-256 + orjson.loads + jsonschema-rs is_valid (Draft 7, ragsnap's "
        "schemas) of every input file; in process peak RSS is the benchmark process's"
    )
    print(f"CPU: {cpu_model()}")
    print(
        f"Load average (1, 5, 15 min): before {', '.join(f'{v:.2f}' for v in load_before)}; "
        f"after {', '.join(f'{v:.2f}' for v in load_after)}"
    )
    print(f"Inputs: {len(paths):,} files, {total_mb:.1f} MB")
    print(
        f"Outputs: 4 reports, "
        f"{sum(p.stat().st_size for p in REPORTS_DIR.glob('current.*')) / 1e6:.1f} MB score, "
        f"{sum(p.stat().st_size for p in REPORTS_DIR.glob('baseline-diff.*')) / 1e6:.1f} MB diff"
    )
    print(
        f"Scored: {summary['passed']} passed, {summary['failed']} failed; diff: "
        f"{diff['counts']['regressedCases']} regressed, "
        f"{diff['counts']['improvedCases']} improved, {diff['counts']['changedCases']} changed"
    )
    print(f"First ragsnap call (warm-up, with imports): {first:.3f} s")
    print(
        f"Python {platform.python_version()}, orjson {version('orjson')}, "
        f"jsonschema-rs {version('jsonschema-rs')}"
    )
    for name, values in samples.items():
        print(f"{name} wall: {', '.join(f'{s.wall:.3f}' for s in values)}")
        print(f"{name} process CPU: {', '.join(f'{s.cpu:.3f}' for s in values)}")

    if phases:
        print_phases()
    if profile:
        profiler = cProfile.Profile()
        gc.collect()
        start = time.perf_counter()
        profiler.runcall(run_ragsnap)
        total = time.perf_counter() - start
        stats = pstats.Stats(profiler, stream=sys.stdout)
        print_profile_shares(stats, total)
        print("\nProfile of one ragsnap run (top 25 by cumulative time):")
        stats.sort_stats("cumulative").print_stats(25)
        print("Top 15 by own time:")
        stats.sort_stats("tottime").print_stats(15)
    return passed


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """Command-line options; every help states its default."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=10_000, help="cases (default: 10000)")
    parser.add_argument(
        "--blocks", type=int, default=10, help="evidence blocks per fixture (default: 10)"
    )
    parser.add_argument("--repeat", type=int, default=3, help="timed rounds (default: 3)")
    add_folder_options(
        parser,
        DEFAULT_SEED,
        "generate (or reuse) the eval set here and keep it (default: a temporary folder)",
    )
    parser.add_argument(
        "--profile", action="store_true", help="print a cProfile of one more ragsnap run"
    )
    parser.add_argument(
        "--phases",
        action="store_true",
        help="print the thread CPU of each step of three more ragsnap runs (default: off)",
    )
    parser.add_argument(
        "--no-processes",
        dest="processes",
        action="store_false",
        help="time only in process, not the floor and ragsnap as whole processes (default: both)",
    )
    args = parser.parse_args(argv)
    if args.cases < 1 or args.blocks < 3 or args.repeat < 1:
        parser.error("--cases and --repeat must be at least 1, --blocks at least 3")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark; return 0 when every target is met, 1 when one is not, 2 when
    orjson (the floor's parser) is missing."""
    args = parse_args(argv)
    if orjson is None:
        print(
            "score_10k: orjson is not installed, and the peer is orjson; install it "
            "(pip install orjson) rather than compare with a slower parser",
            file=sys.stderr,
        )
        return 2
    settings = Settings(GENERATOR_VERSION, args.cases, args.blocks, args.seed)
    with work_folder(args.workdir, "ragsnap-score-10k-", args.keep, "Eval set", enter=True):
        prepare(settings)
        passed = benchmark(args.repeat, args.profile, args.processes, args.seed, args.phases)
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
