"""The windows ``ragprep index`` embeds besides the passages are exactly what ``ask``'s readers ask the embedder for."""

from __future__ import annotations

import hashlib

import numpy as np

from ragprep.matching.scoring import BlendScorer, Candidate
from ragprep.passage_windows import MATCHER_EMBEDS, index_windows, rerank_windows
from tasks.train.reranker import EmbedderReranker

HEADER = "Test Name: FO-2024-001\nRegion: EU\n\n---\n\n"
LONG = " ".join(f"word{i}" for i in range(400))
BODIES = [
    "# Short slide\n\nThe belt load limiter held at 4.5 kN.",  # one window for each reader
    "# Long slide\n\n" + "\n".join(LONG.split()[i:i + 25] and " ".join(LONG.split()[i:i + 25]) for i in range(0, 400, 25)),
    LONG,  # one long line: the matcher cuts it into pieces
]
CONTEXTS = ["UN R16 safety belts", "FMVSS 214\n" + HEADER.strip(), ""]


def indexed(context: str, body: str) -> str:
    return f"{context}\n\n{body}" if context else body


class Recorder:
    """A deterministic embedder that records every passage text it is asked for."""

    name = "recorder"
    dim = 8

    def __init__(self) -> None:
        self.passage_texts: set[str] = set()

    def _vectors(self, texts) -> np.ndarray:
        rows = [np.frombuffer(hashlib.sha256(t.encode()).digest()[:8], dtype=np.uint8).astype(np.float32) + 1 for t in texts]
        out = np.stack(rows) if rows else np.zeros((0, self.dim), np.float32)
        return out / np.linalg.norm(out, axis=1, keepdims=True) if len(out) else out

    def passages(self, texts):
        self.passage_texts.update(texts)
        return self._vectors(texts)

    def queries(self, texts):
        return self._vectors(texts)


def test_index_windows_are_what_the_reranker_and_the_embedded_matcher_read():
    texts = [indexed(c, b) for c, b in zip(CONTEXTS, BODIES)]
    recorder = Recorder()
    EmbedderReranker(recorder).score_pairs(["belt load"] * len(texts), texts, ["t"] * len(texts))
    scorer = BlendScorer(recorder)
    candidates = [Candidate(f"p{i}", body, "t") for i, body in enumerate(BODIES)]
    scorer.sentence_scores(["The limiter held at 4.5 kN."], candidates)
    scorer.question_prior("belt load", candidates)
    listed = index_windows(texts, BODIES, scorer.weights.window_words)
    # every text the readers embed is a passage (embedded by the index anyway) or a listed window, and nothing more
    assert recorder.passage_texts == set(listed) | set(texts)
    assert len(listed) == len(set(listed))
    assert len(rerank_windows(texts[2])) > 1 and len(listed) > len(texts) + 3  # the long texts were cut


def test_a_scorer_that_embeds_no_window_gets_only_the_rerankers():
    texts = [indexed(c, b) for c, b in zip(CONTEXTS, BODIES)]
    only_rerank = index_windows(texts, BODIES, None)
    assert set(only_rerank) == {w for t in texts for w in rerank_windows(t)}
    assert len(only_rerank) < len(index_windows(texts, BODIES, 60))
    assert MATCHER_EMBEDS == {"embedded", "reranker"}
