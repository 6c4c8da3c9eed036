"""The scorer ``refmatch.scorer`` names, built from settings (the scorers themselves are in ``ragprep/matching/scoring.py``)."""

from __future__ import annotations

from ragprep.engines.embedder import Embedder
from ragprep.matching.scoring import BlendScorer, CrossEncoderScorer, RerankerScorer, ScorerError, SpanScorer, blend_weights
from ragprep.settings import Settings
from ragprep.storage import Layout
from tasks.train.loading import trained_reranker


def build_scorer(settings: Settings, embedder: Embedder | None) -> SpanScorer:
    """The scorer ``refmatch.scorer`` names; ``embedder`` is the index's (the embedded scorer needs one)."""
    r = settings.refmatch
    if r.scorer == "lexical":
        return BlendScorer(None, blend_weights(settings))
    if r.scorer == "cross-encoder":
        if r.cross_encoder_path is None:
            raise ScorerError("refmatch.scorer = cross-encoder needs refmatch.cross_encoder_path (a local model folder)")
        return CrossEncoderScorer(r.cross_encoder_path, r.window_words)
    if embedder is None:
        raise ScorerError(f"refmatch.scorer = {r.scorer} needs an embedder")
    if r.scorer == "reranker":
        found = trained_reranker(Layout(settings.root), embedder)
        if found is None:
            raise ScorerError(
                f"refmatch.scorer = reranker, but no trained re-ranker is under {Layout(settings.root).root}/models: "
                "run `ragprep train reranker`, or use refmatch.scorer = embedded"
            )
        return RerankerScorer(found[0], r.window_words)
    return BlendScorer(embedder, blend_weights(settings))
