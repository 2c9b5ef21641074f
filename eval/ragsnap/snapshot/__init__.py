"""Snapshots: one lookup per golden case, captured as a reviewable fixture.

``capture`` runs a case's lookup against a pipeline or a service and builds the
fixture; ``fixturediff`` decides whether a new lookup changed a stored fixture
(identities exactly, numbers within the snapshot tolerance).
"""
