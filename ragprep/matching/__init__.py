"""Matching an answer's sentences to the chunks that support them: the sentence splitter, the span
scorers (lexical, embedded blend, cross-encoder, re-ranker) and the span-batch + DP matcher.

Shared by the qa stage (the ``unsupported_segment`` flag, lexical only) and the refmatch stage
(``ragprep ask`` / ``ragprep refmatch``), so it lives in the core below both; what needs a trained
model from ``<root>/models`` is chosen in ``tasks/refmatch/scoring.py:build_scorer``.
"""
