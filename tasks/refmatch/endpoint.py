"""The ``ask`` endpoint of ``ragprep serve``: ``POST /ask`` on the loopback report page answers like ``ragprep ask``.

The serve process keeps the search index, the embedder, the re-ranker and the span scorer loaded
(``ragprep/kept.py``: reopened only when the index is rebuilt or a model trained), so an answer costs the
question's own work. :meth:`AskEndpoint.warm` loads them when the service starts (from a thread: the service
does not wait for it). Requests are answered one at a time (the engines are not shared between threads).

Request: ``{"question": "...", "k": 5, "variant": "v1"}`` (``k`` and ``variant`` optional). Reply: the
``ragprep ask --json`` object (answer, segments with citations, passages, ``seconds``), or ``{"error": "..."}``
with 400 (a bad request) or 503 (nothing to answer from yet: the message names the command that builds it).
"""

from __future__ import annotations

import threading

from ragprep.engines.embedders import embeddings_cache_dir
from ragprep.errors import RagprepError
from ragprep.settings import Settings
from ragprep.webroot import WebRoot
from tasks.index.run import TEXT_COLUMNS

MAX_QUESTION_CHARS = 2000
"""Characters of a question the endpoint takes."""


def read_request(payload: dict) -> tuple[str, int | None, str | None]:
    """(question, k, variant) of a request; raises ``ValueError`` naming the field that is wrong."""
    question = payload.get("question")
    if not isinstance(question, str) or not question.strip():
        raise ValueError("'question' must be a non-empty string")
    if len(question) > MAX_QUESTION_CHARS:
        raise ValueError(f"'question' is over {MAX_QUESTION_CHARS} characters")
    k = payload.get("k")
    if k is not None and (isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= 50):
        raise ValueError("'k' must be an integer from 1 to 50")
    variant = payload.get("variant")
    if variant is not None and variant not in TEXT_COLUMNS:
        raise ValueError(f"'variant' must be one of {sorted(TEXT_COLUMNS)}")
    return question.strip(), k, variant


class AskEndpoint:
    """``POST /ask``: the request's question answered by ``tasks.refmatch.ask.ask`` with ``settings``."""

    def __init__(self, settings: Settings) -> None:
        """Answer from the indexes under ``settings.root``."""
        self.settings = settings
        self._lock = threading.Lock()
        self.warmed: str | None = None
        """What :meth:`warm` did: 'ready', or why nothing was loaded."""

    def warm(self) -> str:
        """Load the default index, its embedder (one query embedded), the re-ranker and the scorer; returns 'ready', or
        the one-line reason nothing could be loaded (no index yet: the first request after ``ragprep index`` loads)."""
        from tasks.index.loaded import index_embedder, opened_index
        from tasks.index.store import index_folder
        from tasks.refmatch.ask import kept_reranker, kept_scorer

        with self._lock:
            try:
                index = opened_index(index_folder(self.settings, self.settings.index.variant))
                embedder = index_embedder(index.manifest.embedder, self.settings, embeddings_cache_dir(self.settings))
                embedder.queries(["warm-up"])
                kept_reranker(self.settings, embedder)
                kept_scorer(self.settings, embedder)
                self.warmed = "ready"
            except RagprepError as exc:
                self.warmed = str(exc)
        return self.warmed

    def __call__(self, payload: dict) -> tuple[int, dict]:
        """(status, reply) for one request (see the module doc)."""
        from tasks.refmatch.ask import ask

        try:
            question, k, variant = read_request(payload)
        except ValueError as exc:
            return 400, {"error": str(exc)}
        with self._lock:
            try:
                result = ask(self.settings, question, k, variant)
            except RagprepError as exc:
                return 503, {"error": str(exc)}
        return 200, result.model_dump(mode="json")


def add_ask_endpoint(web: WebRoot, settings: Settings) -> threading.Thread:
    """Answer ``POST /ask`` on ``web`` with ``settings``; returns the (unstarted) thread that warms the endpoint: start
    it once the service runs."""
    endpoint = AskEndpoint(settings)
    web.routes["/ask"] = endpoint
    return threading.Thread(target=endpoint.warm, name="ragprep-ask-warm", daemon=True)
