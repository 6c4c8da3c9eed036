"""The chat protocol the remote providers implement."""

from __future__ import annotations

import base64
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from ragprep.errors import RagprepError


class ProviderError(RagprepError):
    """A provider call that failed after the SDK's retries; the message says why."""


@dataclass(frozen=True)
class ImageInput:
    data: bytes
    mime: str = "image/png"

    def data_url(self) -> str:
        """The image as a base64 ``data:`` URL."""
        return f"data:{self.mime};base64,{base64.b64encode(self.data).decode('ascii')}"

    def b64(self) -> str:
        """The image bytes, base64-encoded."""
        return base64.b64encode(self.data).decode("ascii")


@dataclass(frozen=True)
class ChatRequest:
    system: str
    user: str
    images: tuple[ImageInput, ...] = field(default_factory=tuple)
    json_output: bool = False
    json_schema: dict | None = field(default=None, compare=False, repr=False)
    """The JSON schema of the wanted reply (the step's output model), for structured-output modes."""
    max_tokens: int = 1024
    temperature: float = 0.0
    rule: Callable[[], str | dict] | None = field(default=None, compare=False, repr=False)
    """The step's offline rule: what the heuristic backend answers with (remote backends ignore it)."""


@dataclass(frozen=True)
class ChatResponse:
    text: str
    model: str
    input_tokens: int
    output_tokens: int
    data: dict | None = None
    """A structured reply the backend produced natively (the heuristic rules); else parsed from ``text``."""
    structured_mode: str | None = None
    """How JSON was asked for (``json_schema``, ``json_object``, ``prompt``; see ``engines.structured``); None for text."""


class ChatBackend(Protocol):
    """A remote model: one request in, one reply out (retries are the backend's SDK's)."""

    name: str
    model: str
    endpoint: str

    async def chat(self, request: ChatRequest) -> ChatResponse:
        """Send one request; the model's reply."""

    async def aclose(self) -> None:
        """Release the backend's client."""


def sdk_client_options(endpoint: str, api_key: str | None, timeout_s: float, max_retries: int) -> dict[str, object]:
    """What both official SDK clients take: the endpoint, a key (local servers accept any), timeout and retries."""
    return {"base_url": endpoint, "api_key": api_key or "not-needed", "timeout": timeout_s, "max_retries": max_retries}


def sdk_failure(provider: str, endpoint: str, exc: Exception) -> ProviderError:
    """A failed SDK call as one line naming the provider, the endpoint and the cause."""
    if isinstance(exc, ValueError):  # a body that is not JSON
        return ProviderError(f"{provider} endpoint {endpoint}: unreadable response ({exc})")
    return ProviderError(f"{provider} endpoint {endpoint}: {type(exc).__name__}: {exc}")
