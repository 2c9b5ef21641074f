"""The audit of a golden set: could it have turned the PR check red?

A green check means something only if the cases could have caught a
regression. ``ragsnap audit`` answers three questions about a project's
golden set, from the reports it already has and from faults injected into its
own pipeline:

``power``           the minimum detectable effect of each aggregate metric under
                    the diff's paired test, and how many cases a given drop needs
                    (pure: per-case values in, numbers out)
``discrimination``  Sakai's discriminative power of each measure over a trial's
                    methods, and the swap rate between its dev and test splits
                    (pure: a trial report in)
``mutations``       the catalogue of retrieval faults (each a realistic breakage of
                    the embedded pipeline, with the kind of case that catches it)
``faults``          the pipeline faults mutations name (a wrong L0 hint, a reversed
                    reranker), registered by name
``runner``          each mutation re-seeded and re-snapshotted in a scratch store,
                    scored and diffed against the project's baseline as the PR
                    check would (the I/O shell of the audit)
``report``          the audit report: JSON, Markdown and the HTML page
"""
