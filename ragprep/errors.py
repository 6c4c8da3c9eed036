"""The one base of the errors a user can fix: the CLI prints their message on one line and exits 2."""

from __future__ import annotations


class RagprepError(Exception):
    """An error whose message names what is wrong (file, table, setting) and how to fix it."""
