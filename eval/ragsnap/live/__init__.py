"""Live services: the HTTP contract, served and checked.

``service`` is the reference HTTP service (``ragsnap serve``) over a local
knowledge base; ``livecheck`` runs the post-reindex smoke check against any
service that implements the contract.
"""
