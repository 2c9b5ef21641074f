"""Subcommand handlers, imported lazily by ``ragsnap.cli``."""
