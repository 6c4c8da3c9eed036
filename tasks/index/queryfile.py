"""Query files: hand-written questions with their gold document, page or slide and answer keys (JSONL).

Read by ``ragprep evaluate --queries FILE`` (``tasks/evaluate/queries.py``) and by the query adapter's publish
judge (``ragprep train retriever --judge-queries FILE``). A unit of a document **answers** a question when it is
of the question's document and holds every answer key (NFKC, case and whitespace ignored).
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel, ValidationError

from ragprep.errors import RagprepError
from tasks.index.passages import normalised


class QueryFileError(RagprepError):
    """A query file that cannot be read; the message names the file, the line and the fix."""


class Query(BaseModel):
    """One hand-written question with its gold document, page or slide and answer keys."""

    id: str
    question: str
    lang: str
    family: str
    document: str
    page: int | None = None
    slide: int | None = None
    answer_keys: list[str]
    split: str | None = None
    """Optional tag of a question set (``heldout-ko3``: written after the ranking was last tuned, before any change
    they could steer); ``evaluate --queries`` reports each tagged set's scores on their own."""


def load_queries(path: Path) -> list[Query]:
    """The questions of a JSONL query file; raises ``QueryFileError`` naming the line at fault."""
    if not path.is_file():
        raise QueryFileError(f"{path}: no such query file (JSONL, one question a line; see tests/data/README.md)")
    out = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            query = Query.model_validate(json.loads(line))
        except (json.JSONDecodeError, ValidationError) as exc:
            first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise QueryFileError(f"{path}:{number}: not a query line ({first}); each line needs id, question, lang, "
                                 "family, document and answer_keys") from None
        if not query.answer_keys:
            raise QueryFileError(f"{path}:{number}: question {query.id} has no answer_keys; add the strings its answer holds")
        out.append(query)
    if not out:
        raise QueryFileError(f"{path}: no questions in the file")
    return out


def answers(query: Query, document: str, text: str) -> bool:
    """Whether a unit of ``document`` with ``text`` answers ``query`` (right document, every key in the text)."""
    if document != query.document:
        return False
    flat = normalised(text)
    return all(normalised(key) in flat for key in query.answer_keys)
