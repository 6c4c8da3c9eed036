"""refmatch: every segment of an answer linked to the chunk it came from (see matcher.py), and ``ragprep ask``."""
