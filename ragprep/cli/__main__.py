"""``python -m ragprep.cli``: the ``ragprep`` command."""

from ragprep.cli import app

app()
