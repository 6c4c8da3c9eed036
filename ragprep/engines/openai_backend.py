"""Any OpenAI-compatible chat endpoint through the official ``openai`` SDK.

Retries on 429/5xx/timeouts are the SDK's: exponential backoff from 0.5 s to 8 s with
up to 25% jitter, and a server's Retry-After (up to two minutes) honoured.
"""

from __future__ import annotations

import openai
from openai.types.chat import ChatCompletion

from ragprep.engines.chat import ChatRequest, ChatResponse, ProviderError, sdk_client_options, sdk_failure


class OpenAIChat:
    name = "openai"

    def __init__(self, *, model: str, base_url: str | None, api_key: str | None, timeout_s: float, max_retries: int) -> None:
        if not model:
            raise ProviderError("openai provider needs a model: set RAGPREP_LLM__MODEL (or vlm_model)")
        self.model = model
        self.endpoint = base_url or "https://api.openai.com/v1"
        # aiohttp transport: about a third less client CPU per call than the default.
        self._client = openai.AsyncOpenAI(
            **sdk_client_options(self.endpoint, api_key, timeout_s, max_retries),
            http_client=openai.DefaultAioHttpClient(timeout=timeout_s),
        )

    async def chat(self, request: ChatRequest) -> ChatResponse:
        """Send the request to ``/chat/completions``; the first choice's text, the model and the token counts."""
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
        if request.json_output:
            body["response_format"] = {"type": "json_object"}
        try:
            # The SDK's generic POST keeps its retries, timeouts and typed parsing but skips
            # the per-call re-validation of our already well-formed params (its main CPU
            # cost at high request rates).
            completion = await self._client.post("/chat/completions", body=body, cast_to=ChatCompletion)
        except (openai.APIError, ValueError) as exc:
            raise sdk_failure(self.name, self.endpoint, exc) from exc
        if not completion.choices:
            raise ProviderError(f"openai endpoint {self.endpoint}: reply without choices")
        usage = completion.usage
        return ChatResponse(
            text=completion.choices[0].message.content or "",
            model=completion.model or self.model,
            input_tokens=usage.prompt_tokens if usage else 0,
            output_tokens=usage.completion_tokens if usage else 0,
        )

    async def aclose(self) -> None:
        """Close the SDK client."""
        await self._client.close()
