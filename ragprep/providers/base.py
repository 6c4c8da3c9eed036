"""The chat protocol the remote providers implement."""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from typing import Protocol


class ProviderError(Exception):
    """A provider call that failed after the SDK's retries; the message says why."""


@dataclass(frozen=True)
class ImageInput:
    data: bytes
    mime: str = "image/png"

    def data_url(self) -> str:
        return f"data:{self.mime};base64,{base64.b64encode(self.data).decode('ascii')}"

    def b64(self) -> str:
        return base64.b64encode(self.data).decode("ascii")


@dataclass(frozen=True)
class ChatRequest:
    system: str
    user: str
    images: tuple[ImageInput, ...] = field(default_factory=tuple)
    json_output: bool = False
    max_tokens: int = 1024
    temperature: float = 0.0


@dataclass(frozen=True)
class ChatResponse:
    text: str
    model: str
    input_tokens: int
    output_tokens: int


class ChatBackend(Protocol):
    """A remote model: one request in, one reply out (retries are the backend's SDK's)."""

    name: str
    model: str
    endpoint: str

    async def chat(self, request: ChatRequest) -> ChatResponse: ...

    async def aclose(self) -> None: ...
