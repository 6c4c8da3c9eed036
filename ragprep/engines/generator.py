"""What every provider gets: privacy guard, cache, limits, repair, accounting.

``Generator.generate`` runs one step on one item: it renders the step's prompt template
(strictly: a missing or unknown variable is an error, for every provider) and sends it to
the backend. The ``heuristic`` backend answers with the step's offline rule, attached to the
request. A remote backend gets the prompt (images as data URLs / base64 blocks); its
structured output is validated against a pydantic model with one repair attempt, and every
usable reply is cached on disk under a key of provider, model, template hash, rendered inputs
and parameters, so a re-run over unchanged inputs makes no call at all. A structured request
carries the output model's JSON schema, which the ``openai`` backend uses to negotiate its
structured-output mode (``engines.structured``); the mode that works is remembered in
``modes.json`` beside the reply cache and reported per (provider, model) as ``structured_mode``.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import re
import threading
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from aiolimiter import AsyncLimiter
from pydantic import BaseModel, ValidationError

from ragprep.engines.chat import (
    ChatBackend,
    ChatRequest,
    ChatResponse,
    ImageInput,
    ProviderError,
)
from ragprep.engines.guard import check_endpoint
from ragprep.engines.heuristic_backend import HEURISTIC_MODEL, HeuristicChat
from ragprep.engines.structured import ModeMemory
from ragprep.ids import sha256_bytes, stable_id
from ragprep.prompts import PromptTemplate
from ragprep.settings import Settings
from ragprep.storage import atomic_write_bytes

_FENCE_RE = re.compile(r"^```(?:json)?\s*|\s*```$", re.MULTILINE)


@dataclass(frozen=True)
class Generation:
    text: str
    data: dict | None
    provider: str
    model: str
    prompt_ref: str
    prompt_sha256: str | None
    cached: bool = False
    flag: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0


@dataclass
class UsageMeter:
    """Calls, cache hits, failures and tokens per (provider, model), summed over a run, and the
    structured-output modes its JSON replies came in."""

    prices: dict = field(default_factory=dict)
    rows: dict[tuple[str, str], dict[str, float]] = field(default_factory=dict)
    modes: dict[tuple[str, str], dict[str, int]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add_mode(self, provider: str, model: str, mode: str | None) -> None:
        """Count one JSON reply that came in structured-output ``mode`` (None: not a JSON request)."""
        if mode is None:
            return
        with self._lock:
            counts = self.modes.setdefault((provider, model), {})
            counts[mode] = counts.get(mode, 0) + 1

    def structured_mode(self, provider: str, model: str) -> str | None:
        """The mode(s) of (provider, model)'s JSON replies: ``json_object``, or ``json_schema: 3, prompt: 1`` when mixed."""
        counts = self.modes.get((provider, model))
        if not counts:
            return None
        if len(counts) == 1:
            return next(iter(counts))
        return ", ".join(f"{mode}: {n}" for mode, n in sorted(counts.items(), key=lambda kv: -kv[1]))

    def add(self, provider: str, model: str, **counts: float) -> None:
        """Add ``counts`` (calls, cache_hits, failures, repairs, input_tokens, output_tokens) to the row of (provider, model)."""
        with self._lock:
            row = self.rows.setdefault(
                (provider, model),
                {"calls": 0, "cache_hits": 0, "failures": 0, "repairs": 0, "input_tokens": 0, "output_tokens": 0},
            )
            for key, value in counts.items():
                row[key] += value

    def table(self) -> list[dict[str, object]]:
        """One row per (provider, model) with its counts and cost in USD (None when the model has no price)."""
        out = []
        for (provider, model), row in sorted(self.rows.items()):
            price = self.prices.get(model)
            cost = (
                round(row["input_tokens"] / 1e6 * price.input_per_mtok + row["output_tokens"] / 1e6 * price.output_per_mtok, 6)
                if price
                else None
            )
            out.append({
                "provider": provider, "model": model, **{k: int(v) for k, v in row.items()}, "cost_usd": cost,
                "structured_mode": self.structured_mode(provider, model),
            })
        return out

    @property
    def calls(self) -> int:
        """Remote calls made over all (provider, model) rows."""
        return int(sum(r["calls"] for r in self.rows.values()))


_cache_log = logging.getLogger("ragprep.cache")


def _read_cached_reply(path: Path | None) -> ChatResponse | None:
    """The cached reply at ``path``; None when there is none or it is unreadable (a miss: warned, asked again, replaced)."""
    if path is None or not path.exists():
        return None
    try:
        reply = ChatResponse(**json.loads(path.read_text(encoding="utf-8")))
        if not isinstance(reply.text, str) or not isinstance(reply.model, str):
            raise TypeError("text or model is not a string")
    except (OSError, ValueError, TypeError) as exc:
        _cache_log.warning("unreadable LLM reply cache entry %s (%s): treated as a miss, asked again and replaced", path, exc)
        return None
    return reply


def parse_json_object(text: str) -> dict:
    """The JSON object in a reply, tolerating Markdown fences and prose around it."""
    cleaned = _FENCE_RE.sub("", text.strip())
    try:
        value = json.loads(cleaned)
    except json.JSONDecodeError:
        start, end = cleaned.find("{"), cleaned.rfind("}")
        if start < 0 or end <= start:
            raise ValueError("no JSON object in the reply") from None
        value = json.loads(cleaned[start : end + 1])
    if not isinstance(value, dict):
        raise ValueError("the reply is JSON but not an object")
    return value


@functools.lru_cache(maxsize=64)
def output_schema(output_model: type[BaseModel]) -> dict:
    """The JSON schema of a step's output model (computed once per model; callers must not change it)."""
    return output_model.model_json_schema()


def build_backend(settings: Settings, role: str, modes: ModeMemory | None = None) -> ChatBackend:
    """The backend for a role ('llm' or 'vlm'): the offline rules, or a remote model after the privacy guard.

    ``modes`` remembers the structured-output mode per endpoint and model (openai provider)."""
    provider = settings.llm.provider if role == "llm" else (settings.llm.vlm_provider or settings.llm.provider)
    model = settings.llm.model if role == "llm" else (settings.llm.vlm_model or settings.llm.model)
    key = settings.llm.api_key.get_secret_value() if settings.llm.api_key else None
    if provider == "heuristic":
        return HeuristicChat()
    if provider == "openai":
        from ragprep.engines.openai_backend import OpenAIChat

        url = settings.llm.base_url or "https://api.openai.com/v1"
        check_endpoint(url, settings.llm.allowed_hosts, provider)
        return OpenAIChat(
            model=model, base_url=url, api_key=key, timeout_s=settings.llm.timeout_s, max_retries=settings.llm.max_retries,
            modes=modes,
        )
    if provider == "anthropic":
        from ragprep.engines.anthropic_backend import AnthropicChat

        if settings.llm.anthropic_bedrock:
            url = settings.llm.anthropic_base_url or f"https://bedrock-runtime.{settings.llm.aws_region}.amazonaws.com"
        else:
            url = settings.llm.anthropic_base_url or "https://api.anthropic.com"
        check_endpoint(url, settings.llm.allowed_hosts, provider)
        return AnthropicChat(
            model=model,
            base_url=url,
            api_key=key,
            bedrock=settings.llm.anthropic_bedrock,
            aws_region=settings.llm.aws_region,
            timeout_s=settings.llm.timeout_s,
            max_retries=settings.llm.max_retries,
        )
    raise ProviderError(f"unknown provider {provider!r}")


class Generator:
    """Runs steps on items with one provider; create it inside the event loop that uses it."""

    def __init__(
        self,
        settings: Settings,
        role: str = "llm",
        *,
        cache_dir: Path | None = None,
        meter: UsageMeter | None = None,
        backend: ChatBackend | None = None,
    ) -> None:
        self.settings = settings
        modes = ModeMemory(cache_dir / "modes.json" if cache_dir is not None else None)
        self.backend = backend if backend is not None else build_backend(settings, role, modes)
        self.provider = self.backend.name
        self.model = self.backend.model
        self.cache_dir = cache_dir
        self.meter = meter if meter is not None else UsageMeter(prices=settings.llm.prices)
        self._semaphore = asyncio.Semaphore(settings.llm.concurrency)
        self._limiter = AsyncLimiter(settings.llm.requests_per_minute, 60.0)

    @property
    def offline(self) -> bool:
        """True when the heuristic rules answer (no model, no cache, no usage)."""
        return isinstance(self.backend, HeuristicChat)

    def prompt_label(self, prompt: PromptTemplate) -> str:
        """What rows record as their prompt: ``id@version``, or the rule set for the heuristic provider."""
        return f"heuristic:{prompt.id}@{HEURISTIC_MODEL}" if self.offline else prompt.ref

    async def aclose(self) -> None:
        """Close the backend's connections."""
        await self.backend.aclose()

    # -- remote calls -------------------------------------------------------------

    def _cache_path(self, request: ChatRequest, prompt: PromptTemplate) -> Path | None:
        if self.cache_dir is None:
            return None
        parts: list[object] = [
            "chat", self.provider, self.model, prompt.sha256, request.system, request.user,
            [sha256_bytes(i.data) for i in request.images], request.json_output, request.max_tokens, request.temperature,
        ]
        if request.json_schema is not None:  # only structured requests carry one: text keys are unchanged
            parts.append(json.dumps(request.json_schema, sort_keys=True))
        key = stable_id(*parts)
        return self.cache_dir / key[:2] / f"{key}.json"

    async def _call(self, request: ChatRequest, prompt: PromptTemplate) -> tuple[ChatResponse, bool, Path | None]:
        """(response, answered from cache, where to cache it once it proves usable)."""
        cache_path = self._cache_path(request, prompt)
        cached = _read_cached_reply(cache_path)
        if cached is not None:
            self.meter.add(self.provider, self.model, cache_hits=1)
            return cached, True, None
        async with self._semaphore:
            async with self._limiter:
                try:
                    response = await self.backend.chat(request)
                except ProviderError:
                    self.meter.add(self.provider, self.model, failures=1)
                    raise
        self.meter.add(
            self.provider, self.model, calls=1, input_tokens=response.input_tokens, output_tokens=response.output_tokens
        )
        if request.json_output:  # a provider without negotiation (anthropic) asks by prompt alone
            self.meter.add_mode(self.provider, self.model, response.structured_mode or "prompt")
        return response, False, cache_path

    @staticmethod
    def _remember(cache_path: Path | None, response: ChatResponse) -> None:
        """Cache only usable replies, so an item that failed is asked again next run."""
        if cache_path is not None:
            reply = {k: v for k, v in asdict(response).items() if k != "data"}
            atomic_write_bytes(cache_path, json.dumps(reply, ensure_ascii=False).encode("utf-8"))

    async def _answer_offline(
        self, step: str, request: ChatRequest, output_model: type[BaseModel] | None
    ) -> Generation:
        """The rule's reply: not cached, not metered, validated like a model's."""
        response = await self.backend.chat(request)
        data, flag = response.data, None
        if output_model is not None and data is not None:
            try:
                data = output_model.model_validate(data).model_dump()
            except ValidationError as exc:
                flag = f"invalid_output: {exc.errors()[0]['msg']}"
        text = json.dumps(data, ensure_ascii=False) if data is not None else response.text
        return Generation(text, data, "heuristic", HEURISTIC_MODEL, f"heuristic:{step}@{HEURISTIC_MODEL}", None, flag=flag)

    async def generate(
        self,
        step: str,
        prompt: PromptTemplate,
        variables: dict[str, object],
        *,
        heuristic: Callable[[], str | dict],
        images: Sequence[ImageInput] = (),
        output_model: type[BaseModel] | None = None,
    ) -> Generation:
        """Run ``step`` on one item; never raises for a bad reply or a failed call (flags it).

        ``heuristic`` is the step's offline rule; the heuristic backend answers the rendered
        prompt with it."""
        system, user = prompt.render(variables)
        schema = output_schema(output_model) if output_model is not None and not self.offline else None
        request = ChatRequest(
            system=system,
            user=user,
            images=tuple(images),
            json_output=output_model is not None,
            json_schema=schema,
            max_tokens=self.settings.llm.max_output_tokens,
            rule=heuristic,
        )
        if self.offline:
            return await self._answer_offline(step, request, output_model)
        base = {"provider": self.provider, "prompt_ref": prompt.ref, "prompt_sha256": prompt.sha256}
        try:
            response, cached, cache_path = await self._call(request, prompt)
        except ProviderError as exc:
            return Generation("", None, model=self.model, flag=f"call_failed: {exc}", **base)
        first_cache_path = cache_path
        tokens = {"input_tokens": response.input_tokens, "output_tokens": response.output_tokens}
        if output_model is None:
            if response.text.strip():
                self._remember(cache_path, response)
            return Generation(response.text, None, model=response.model, cached=cached, **tokens, **base)
        try:
            data = output_model.model_validate(parse_json_object(response.text)).model_dump()
            self._remember(cache_path, response)
            return Generation(response.text, data, model=response.model, cached=cached, **tokens, **base)
        except (ValueError, ValidationError) as first_error:
            reason = str(first_error).splitlines()[0][:300]
        repair = ChatRequest(
            system=system,
            user=f"{user}\n\nYour previous reply could not be used ({reason}). Reply again with only the JSON object.",
            images=tuple(images),
            json_output=True,
            json_schema=schema,
            max_tokens=self.settings.llm.max_output_tokens,
        )
        self.meter.add(self.provider, self.model, repairs=1)
        try:
            response, cached, cache_path = await self._call(repair, prompt)
            tokens = {
                "input_tokens": tokens["input_tokens"] + response.input_tokens,
                "output_tokens": tokens["output_tokens"] + response.output_tokens,
            }
            data = output_model.model_validate(parse_json_object(response.text)).model_dump()
            # the repaired reply answers the original request too: a re-run makes no call
            self._remember(cache_path, response)
            self._remember(first_cache_path, response)
            return Generation(response.text, data, model=response.model, cached=cached, **tokens, **base)
        except ProviderError as exc:
            return Generation("", None, model=self.model, flag=f"call_failed: {exc}", **base)
        except (ValueError, ValidationError) as second_error:
            detail = str(second_error).splitlines()[0][:300]
            return Generation(response.text, None, model=response.model, flag=f"invalid_output: {detail}", **tokens, **base)
