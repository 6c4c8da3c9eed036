"""Any OpenAI-compatible chat endpoint through the official ``openai`` SDK.

Retries on 429/5xx/timeouts are the SDK's: exponential backoff from 0.5 s to 8 s with
up to 25% jitter, and a server's Retry-After (up to two minutes) honoured.

A request that wants JSON negotiates its structured-output mode (``engines.structured``):
``json_schema``, then ``json_object`` + schema, then the prompt alone. A mode not yet known to
work is tried once, without retries; an HTTP 400/422/500 to it means "not supported here" and
the next mode is tried (a context-length error is not taken for that). The mode that works is
remembered per endpoint and model, so later calls go straight to it.
"""

from __future__ import annotations

import openai
from openai.types.chat import ChatCompletion

from ragprep.engines.chat import ChatRequest, ChatResponse, ProviderError, sdk_client_options, sdk_failure
from ragprep.engines.structured import ModeMemory, modes_to_try, response_format

FORMAT_REFUSED = (400, 422, 500)
"""Statuses that, on a request carrying a ``response_format``, mean "this format is not supported"."""

_CONTEXT_WORDS = ("context", "too long", "too many tokens", "exceed")


def format_refused(exc: Exception) -> bool:
    """Whether a failed call with a ``response_format`` reads as "this format is not supported here"."""
    if not isinstance(exc, openai.APIStatusError) or exc.status_code not in FORMAT_REFUSED:
        return False
    message = str(exc).lower()
    return not any(word in message for word in _CONTEXT_WORDS)  # a prompt too long fails in every mode


def _worth_retrying(exc: Exception) -> bool:
    """A failed probe that the SDK's retries would have retried (timeouts, 408/409/429, other 5xx)."""
    if isinstance(exc, openai.APIConnectionError):
        return True
    if isinstance(exc, openai.APIStatusError):
        return not format_refused(exc) and (exc.status_code in (408, 409, 429) or exc.status_code >= 500)
    return False


class OpenAIChat:
    name = "openai"

    def __init__(
        self,
        *,
        model: str,
        base_url: str | None,
        api_key: str | None,
        timeout_s: float,
        max_retries: int,
        modes: ModeMemory | None = None,
    ) -> None:
        if not model:
            raise ProviderError("openai provider needs a model: set RAGPREP_LLM__MODEL (or vlm_model)")
        self.model = model
        self.endpoint = base_url or "https://api.openai.com/v1"
        # aiohttp transport: about a third less client CPU per call than the default.
        self._client = openai.AsyncOpenAI(
            **sdk_client_options(self.endpoint, api_key, timeout_s, max_retries),
            http_client=openai.DefaultAioHttpClient(timeout=timeout_s),
        )
        self.modes = modes if modes is not None else ModeMemory(None)

    async def chat(self, request: ChatRequest) -> ChatResponse:
        """Send the request to ``/chat/completions``; the first choice's text, the model and the token counts.

        A JSON request goes in the first structured-output mode the endpoint accepts (module docstring)."""
        content: str | list[dict] = request.user
        if request.images:
            content = [{"type": "image_url", "image_url": {"url": image.data_url()}} for image in request.images]
            content.append({"type": "text", "text": request.user})
        body: dict = {
            "model": self.model,
            "messages": [{"role": "system", "content": request.system}, {"role": "user", "content": content}],
            "max_tokens": request.max_tokens,
            "temperature": request.temperature,
        }
        if not request.json_output:
            return self._response(await self._post(body), None)
        remembered = self.modes.recall(self.endpoint, self.model)
        modes = modes_to_try(remembered, request.json_schema is not None)
        for mode in modes:
            fmt = response_format(mode, request.json_schema)
            attempt = {**body, "response_format": fmt} if fmt is not None else body
            try:
                completion = await self._post(attempt, probe=mode != remembered and fmt is not None)
            except ProviderError as exc:
                if fmt is not None and format_refused(exc.__cause__):
                    continue  # this endpoint does not take this response_format: the next mode
                raise
            self.modes.learn(self.endpoint, self.model, mode)
            return self._response(completion, mode)
        raise AssertionError("unreachable: the prompt mode sends no response_format")  # pragma: no cover

    async def _post(self, body: dict, *, probe: bool = False) -> ChatCompletion:
        """One POST with the SDK's retries; a probe of a mode not known to work goes once first, without them."""
        try:
            # The SDK's generic POST keeps its retries, timeouts and typed parsing but skips
            # the per-call re-validation of our already well-formed params (its main CPU
            # cost at high request rates).
            if probe:
                try:
                    return await self._client.post(
                        "/chat/completions", body=body, cast_to=ChatCompletion, options={"max_retries": 0}
                    )
                except openai.APIError as exc:
                    if not _worth_retrying(exc):
                        raise
                    # a busy or flaky server, not a refusal: the usual retries decide
            return await self._client.post("/chat/completions", body=body, cast_to=ChatCompletion)
        except (openai.APIError, ValueError) as exc:
            raise sdk_failure(self.name, self.endpoint, exc) from exc

    def _response(self, completion: ChatCompletion, mode: str | None) -> ChatResponse:
        if not completion.choices:
            raise ProviderError(f"openai endpoint {self.endpoint}: reply without choices")
        usage = completion.usage
        return ChatResponse(
            text=completion.choices[0].message.content or "",
            model=completion.model or self.model,
            input_tokens=usage.prompt_tokens if usage else 0,
            output_tokens=usage.completion_tokens if usage else 0,
            structured_mode=mode,
        )

    async def aclose(self) -> None:
        """Close the SDK client."""
        await self._client.close()
