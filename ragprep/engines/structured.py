"""Structured-output modes of an OpenAI-compatible endpoint, and which one works where.

A request that wants JSON is sent in the first mode the endpoint accepts, in this order:

* ``json_schema``: OpenAI structured outputs, ``response_format = {"type": "json_schema", ...}``
  (OpenAI, vLLM, recent Ollama);
* ``json_object``: ``{"type": "json_object", "schema": {...}}`` (llama.cpp's servers turn the schema
  into a grammar; servers that ignore the extra key still return JSON);
* ``prompt``: no ``response_format`` at all; the prompt asks for JSON and the Generator's repair
  attempt covers a bad reply.

``ModeMemory`` remembers, per endpoint and model, the mode that last worked: in memory for the
process and in a JSON file (``<root>/cache/llm/modes.json``), so later calls and later runs go
straight to it.
"""

from __future__ import annotations

import json
import re
import threading
from pathlib import Path
from typing import ClassVar

from ragprep.storage import atomic_write_bytes

MODES: tuple[str, ...] = ("json_schema", "json_object", "prompt")
"""The negotiation order, richest first."""

_NAME_RE = re.compile(r"[^A-Za-z0-9_-]+")


def modes_to_try(remembered: str | None, has_schema: bool) -> list[str]:
    """The modes to try for one request: from the remembered one (or the first) down to ``prompt``.

    Without a schema there is nothing to send as ``json_schema``; that mode is skipped."""
    start = MODES.index(remembered) if remembered in MODES else 0
    return [m for m in MODES[start:] if has_schema or m != "json_schema"]


def response_format(mode: str, schema: dict | None) -> dict | None:
    """The ``response_format`` a mode sends (None for ``prompt``)."""
    if mode == "json_schema":
        name = _NAME_RE.sub("_", str((schema or {}).get("title") or "reply"))[:64] or "reply"
        return {"type": "json_schema", "json_schema": {"name": name, "schema": schema or {}}}
    if mode == "json_object":
        return {"type": "json_object", "schema": schema} if schema else {"type": "json_object"}
    return None


class ModeMemory:
    """Which mode works per (endpoint, model): a process-wide memory backed by one JSON file.

    The in-process memory is keyed by the file too, so two roots in one process (tests) stay
    independent; ``path=None`` keeps the memory in the process only."""

    _memory: ClassVar[dict[tuple[str, str, str], str]] = {}
    _lock: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self, path: Path | None) -> None:
        self.path = path

    @staticmethod
    def _file_key(endpoint: str, model: str) -> str:
        return f"{endpoint} {model}"

    def _read_file(self) -> dict[str, str]:
        if self.path is None or not self.path.exists():
            return {}
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}  # a damaged file only costs one negotiation
        return {k: v for k, v in data.items() if v in MODES} if isinstance(data, dict) else {}

    def recall(self, endpoint: str, model: str) -> str | None:
        """The mode that last worked for (endpoint, model), or None when it was never negotiated."""
        key = (str(self.path or ""), endpoint, model)
        with self._lock:
            if key in self._memory:
                return self._memory[key]
            mode = self._read_file().get(self._file_key(endpoint, model))
            if mode is not None:
                self._memory[key] = mode
            return mode

    def learn(self, endpoint: str, model: str, mode: str) -> None:
        """Remember that ``mode`` worked (written to the file only when it changes)."""
        key = (str(self.path or ""), endpoint, model)
        with self._lock:
            if self._memory.get(key) == mode:
                return
            self._memory[key] = mode
            if self.path is not None:
                modes = self._read_file()
                modes[self._file_key(endpoint, model)] = mode
                atomic_write_bytes(self.path, json.dumps(modes, indent=2, sort_keys=True).encode("utf-8"))

    @classmethod
    def forget(cls) -> None:
        """Drop the in-process memory (the files stay); for tests."""
        with cls._lock:
            cls._memory.clear()
