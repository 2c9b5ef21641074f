"""Offline scoring: fixtures against golden cases, and reports against a baseline.

Pure functions over the models. ``hits`` scores one case (hit level,
pipeline expectations, pass state), ``casemetrics`` its graded measures,
``aggregates`` the rates and means per group, ``report`` the JSON and Markdown
report, ``diff`` a report against a baseline, ``summary`` the terminal lines.
"""
