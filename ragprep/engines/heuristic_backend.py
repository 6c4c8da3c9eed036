"""The ``heuristic`` provider as a chat backend: deterministic rules, no model.

The generator renders every prompt exactly as for a remote model (so a template that does not
match its variables fails here too) and sends the request; this backend answers it by calling
the offline rule that the step attached to the request. Replies record ``provider=heuristic``
and ``model=ragprep-rules-1``: they are rules, and every row says so.
"""

from __future__ import annotations

import json

from ragprep.engines.chat import ChatRequest, ChatResponse, ProviderError

HEURISTIC_MODEL = "ragprep-rules-1"
"""What heuristic rows record as their model: the rule set's version, not an LLM."""


class HeuristicChat:
    """Answers a rendered request with the step's offline rule (``request.rule``)."""

    name = "heuristic"
    model = HEURISTIC_MODEL
    endpoint = "rules:local"

    async def chat(self, request: ChatRequest) -> ChatResponse:
        """Run the rule; a dict reply is returned as structured data and as its JSON text."""
        if request.rule is None:
            raise ProviderError("the heuristic provider has no offline rule for this step")
        result = request.rule()
        if isinstance(result, dict):
            return ChatResponse(json.dumps(result, ensure_ascii=False), HEURISTIC_MODEL, 0, 0, data=result)
        return ChatResponse(str(result), HEURISTIC_MODEL, 0, 0)

    async def aclose(self) -> None:
        """Nothing to release."""
