"""Trials: retrieval methods side by side on one corpus and one set of golden cases.

``ragsnap trial`` seeds a temporary knowledge base (one per vector provider),
runs every requested method over the same queries with the same k, and
writes one comparison report: hit levels, graded IR measures over raw
rankings, span metrics and no-answer false positives per method, overall and
per split, language and category; latency from seeded, shuffled repetitions;
a determinism check; gates.

``plan`` pins a trial (inputs digest, methods and their settings, depth,
split, repetitions, seed); ``runner`` runs the passes; ``measure`` turns
lookups into measurements (pure); ``gates`` checks them against thresholds
(pure); ``report`` builds the privacy-safe JSON report and its Markdown.
"""
