"""IR measures and TREC files.

``metrics`` parses measure names (``ndcg@10``) and computes them over rankings
and graded judgments, trec_eval-compatible; ``trec`` reads and writes TREC run
and qrels files.
"""
