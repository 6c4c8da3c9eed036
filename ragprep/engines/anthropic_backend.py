"""Claude through the official ``anthropic`` SDK, on the API or on AWS Bedrock.

Retries are the SDK's (exponential backoff with jitter, Retry-After honoured).
Current SDK versions no longer take ``temperature``; the model default applies.
"""

from __future__ import annotations

import anthropic
from anthropic.types import Message

from ragprep.engines.chat import ChatRequest, ChatResponse, ProviderError, sdk_client_options, sdk_failure


class AnthropicChat:
    name = "anthropic"

    def __init__(
        self,
        *,
        model: str,
        base_url: str | None,
        api_key: str | None,
        bedrock: bool,
        aws_region: str | None,
        timeout_s: float,
        max_retries: int,
    ) -> None:
        if not model:
            raise ProviderError("anthropic provider needs a model: set RAGPREP_LLM__MODEL (or vlm_model)")
        self.model = model
        if bedrock:
            if not aws_region:
                raise ProviderError("anthropic on Bedrock needs RAGPREP_LLM__AWS_REGION")
            self.endpoint = base_url or f"https://bedrock-runtime.{aws_region}.amazonaws.com"
            self._client = anthropic.AsyncAnthropicBedrock(
                aws_region=aws_region, base_url=self.endpoint, timeout=timeout_s, max_retries=max_retries
            )
        else:
            self.endpoint = base_url or "https://api.anthropic.com"
            self._client = anthropic.AsyncAnthropic(
                **sdk_client_options(self.endpoint, api_key, timeout_s, max_retries),
                http_client=anthropic.DefaultAioHttpClient(timeout=timeout_s),
            )

    async def chat(self, request: ChatRequest) -> ChatResponse:
        """Send the request to the Messages API; the reply text, model and token counts."""
        content: list[dict] = [
            {"type": "image", "source": {"type": "base64", "media_type": image.mime, "data": image.b64()}}
            for image in request.images
        ]
        content.append({"type": "text", "text": request.user})
        body = {
            "model": self.model,
            "max_tokens": request.max_tokens,
            "system": request.system,
            "messages": [{"role": "user", "content": content}],
        }
        try:
            # The SDK's generic POST: same retries, timeouts and typed parsing, without the
            # per-call re-validation of params we build well-formed ourselves.
            message = await self._client.post("/v1/messages", body=body, cast_to=Message)
        except (anthropic.APIError, ValueError) as exc:
            raise sdk_failure(self.name, self.endpoint, exc) from exc
        text = "".join(block.text for block in message.content if getattr(block, "type", "") == "text")
        return ChatResponse(
            text=text,
            model=message.model or self.model,
            input_tokens=message.usage.input_tokens if message.usage else 0,
            output_tokens=message.usage.output_tokens if message.usage else 0,
        )

    async def aclose(self) -> None:
        """Close the SDK client."""
        await self._client.close()
