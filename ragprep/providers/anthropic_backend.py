"""Claude through the official ``anthropic`` SDK, on the API or on AWS Bedrock.

Retries are the SDK's (exponential backoff with jitter, Retry-After honoured).
Current SDK versions no longer take ``temperature``; the model default applies.
"""

from __future__ import annotations

import anthropic
from anthropic.types import Message

from ragprep.providers.base import ChatRequest, ChatResponse, ProviderError


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
            raise ProviderError("anthropic provider needs a model: set RAGPREP_LLM_MODEL (or vlm_model)")
        self.model = model
        if bedrock:
            if not aws_region:
                raise ProviderError("anthropic on Bedrock needs RAGPREP_AWS_REGION")
            self.endpoint = base_url or f"https://bedrock-runtime.{aws_region}.amazonaws.com"
            self._client = anthropic.AsyncAnthropicBedrock(
                aws_region=aws_region, base_url=self.endpoint, timeout=timeout_s, max_retries=max_retries
            )
        else:
            self.endpoint = base_url or "https://api.anthropic.com"
            self._client = anthropic.AsyncAnthropic(
                base_url=self.endpoint,
                api_key=api_key or "not-needed",
                timeout=timeout_s,
                max_retries=max_retries,
                http_client=anthropic.DefaultAioHttpClient(timeout=timeout_s),
            )

    async def chat(self, request: ChatRequest) -> ChatResponse:
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
        except anthropic.APIError as exc:
            raise ProviderError(f"anthropic endpoint {self.endpoint}: {type(exc).__name__}: {exc}") from exc
        except ValueError as exc:
            raise ProviderError(f"anthropic endpoint {self.endpoint}: unreadable response ({exc})") from exc
        text = "".join(block.text for block in message.content if getattr(block, "type", "") == "text")
        return ChatResponse(
            text=text,
            model=message.model or self.model,
            input_tokens=message.usage.input_tokens if message.usage else 0,
            output_tokens=message.usage.output_tokens if message.usage else 0,
        )

    async def aclose(self) -> None:
        await self._client.close()
