"""The knowledge base: seed documents in, ranked evidence out.

``corpus`` reads seed documents (frontmatter is metadata, the body is chunked),
``text`` holds the analyzers, ``embedders`` the vector providers, ``seeding``
the delete-then-upload by source, ``backends`` one module per store, and
``pipeline`` the lookup that turns a query into a ``lookupResult``.
``numeric`` keeps every score and vector machine-independent.
"""
