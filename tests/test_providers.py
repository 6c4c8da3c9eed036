"""Provider contract tests: every remote provider through its real SDK against a real
HTTP server on loopback (tests/fake_llm_server.py), plus the heuristic provider,
the privacy guard, the response cache and strict prompts."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest
from pydantic import BaseModel

from ragprep.engines.chat import ImageInput
from ragprep.engines.generator import Generator, UsageMeter, build_backend
from ragprep.engines.guard import PrivacyGuardError, check_endpoint
from ragprep.prompts import PromptError, load_prompt
from ragprep.settings import Settings
from tests.fake_llm_server import FakeLLMServer

PROVIDERS = ["openai", "anthropic"]


pytestmark = pytest.mark.usefixtures("server")  # tests/conftest.py: one server per module, reset around each test


def settings_for(provider: str, server: FakeLLMServer, tmp_path: Path, **extra) -> Settings:
    url = {"base_url": server.openai_base_url} if provider == "openai" else {"anthropic_base_url": server.anthropic_base_url}
    llm = {"provider": provider, "model": "test-model", "max_retries": extra.pop("retries", 2),
           "timeout_s": extra.pop("timeout", 5.0), **url, **extra}
    return Settings(root=tmp_path, llm=llm)


def run(coro):
    return asyncio.run(coro)


async def generate_once(settings: Settings, cache_dir: Path | None = None, *, output_model=None, images=(), prompt_id="correct_slide", variables=None):
    generator = Generator(settings, "llm", cache_dir=cache_dir)
    try:
        prompt = load_prompt(prompt_id)
        variables = variables or {"slide_number": 1, "document": "deck.pptx", "slide_markdown": "# Title\n\nHIC15 412.6"}
        generation = await generator.generate(prompt_id, prompt, variables, heuristic=lambda: "unused", output_model=output_model, images=images)
        return generation, generator.meter
    finally:
        await generator.aclose()


class Reply(BaseModel):
    value: str


@pytest.mark.parametrize("provider", PROVIDERS)
def test_plain_call_records_provenance(provider, server, tmp_path):
    server.responder = lambda body, api: f"reply via {api}"
    generation, meter = run(generate_once(settings_for(provider, server, tmp_path)))
    assert generation.text == f"reply via {provider}"
    assert (generation.provider, generation.model, generation.prompt_ref) == (provider, "test-model", "correct_slide@1")
    assert generation.prompt_sha256 == load_prompt("correct_slide").sha256
    assert generation.flag is None and generation.input_tokens > 0 and generation.output_tokens == 3
    body = server.requests[0]["json"]
    assert body["model"] == "test-model"
    sent = json.dumps(body)
    assert "HIC15 412.6" in sent and "never change, round or invent a number" in sent
    assert meter.calls == 1


@pytest.mark.parametrize("provider", PROVIDERS)
def test_429_retry_after_is_honoured(provider, server, tmp_path):
    server.enqueue_faults([("status", 429, {"Retry-After": "1"})])
    started = time.monotonic()
    generation, _ = run(generate_once(settings_for(provider, server, tmp_path)))
    assert generation.flag is None
    assert time.monotonic() - started >= 0.95
    assert server.request_count == 2


@pytest.mark.parametrize("provider", PROVIDERS)
def test_500_is_retried(provider, server, tmp_path):
    server.enqueue_faults([("status", 500, {}), ("status", 503, {})])
    generation, _ = run(generate_once(settings_for(provider, server, tmp_path, retries=3)))
    assert generation.flag is None and server.request_count == 3


@pytest.mark.parametrize("provider", PROVIDERS)
def test_timeout_then_give_up_is_flagged_not_raised(provider, server, tmp_path):
    server.enqueue_faults([("hang", 3.0)])
    generation, meter = run(generate_once(settings_for(provider, server, tmp_path, retries=0, timeout=0.5)))
    assert generation.flag.startswith("call_failed:") and "Timeout" in generation.flag
    assert generation.text == "" and meter.table()[0]["failures"] == 1


@pytest.mark.parametrize("provider", PROVIDERS)
def test_timeout_is_retried(provider, server, tmp_path):
    server.enqueue_faults([("hang", 2.0)])
    generation, _ = run(generate_once(settings_for(provider, server, tmp_path, retries=1, timeout=0.5)))
    assert generation.flag is None and server.request_count == 2


@pytest.mark.parametrize("provider", PROVIDERS)
def test_malformed_body_is_flagged(provider, server, tmp_path):
    server.enqueue_faults([("malformed",)] * 5)
    generation, _ = run(generate_once(settings_for(provider, server, tmp_path, retries=0)))
    assert generation.flag and generation.flag.startswith("call_failed:")


@pytest.mark.parametrize("provider", PROVIDERS)
def test_invalid_structured_output_gets_one_repair(provider, server, tmp_path):
    server.enqueue_faults([("content", "Sure! The value is probably fine.")])
    server.responder = lambda body, api: json.dumps({"value": "ok"})
    generation, meter = run(generate_once(settings_for(provider, server, tmp_path), output_model=Reply))
    assert generation.data == {"value": "ok"} and generation.flag is None
    assert server.request_count == 2
    assert "could not be used" in json.dumps(server.requests[1]["json"])
    assert meter.table()[0]["repairs"] == 1



@pytest.mark.parametrize("provider", PROVIDERS)
def test_repaired_reply_is_cached_for_the_original_request(provider, server, tmp_path):
    server.enqueue_faults([("content", "not json at all")])
    server.responder = lambda body, api: json.dumps({"value": "ok"})
    first, _ = run(generate_once(settings_for(provider, server, tmp_path), tmp_path / "cache", output_model=Reply))
    assert first.data == {"value": "ok"} and server.request_count == 2
    again, meter = run(generate_once(settings_for(provider, server, tmp_path), tmp_path / "cache", output_model=Reply))
    assert again.data == {"value": "ok"} and again.cached
    assert server.request_count == 2 and meter.calls == 0, "a re-run makes no call"


@pytest.mark.parametrize("provider", PROVIDERS)
def test_invalid_twice_is_flagged(provider, server, tmp_path):
    server.responder = lambda body, api: '{"other": 1}'
    generation, _ = run(generate_once(settings_for(provider, server, tmp_path), output_model=Reply))
    assert generation.data is None and generation.flag.startswith("invalid_output:")
    assert server.request_count == 2


@pytest.mark.parametrize("provider", PROVIDERS)
def test_json_in_fences_is_accepted(provider, server, tmp_path):
    server.responder = lambda body, api: 'Here you go:\n```json\n{"value": "fenced"}\n```'
    generation, _ = run(generate_once(settings_for(provider, server, tmp_path), output_model=Reply))
    assert generation.data == {"value": "fenced"} and server.request_count == 1


@pytest.mark.parametrize("provider", PROVIDERS)
def test_images_are_sent_inline(provider, server, tmp_path):
    image = ImageInput(b"\x89PNG\r\n\x1a\nfake", "image/png")
    variables = {"kind": "picture", "location": "slide 5", "document": "d.pptx", "ocr_text": "", "structure": "", "has_image": True}
    generation, _ = run(generate_once(settings_for(provider, server, tmp_path), images=[image], prompt_id="describe_image", variables=variables))
    assert generation.flag is None and server.images_seen == 1
    sent = json.dumps(server.requests[0]["json"])
    assert ("data:image/png;base64," in sent) if provider == "openai" else ('"media_type": "image/png"' in sent)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_cache_makes_the_second_run_free(provider, server, tmp_path):
    settings = settings_for(provider, server, tmp_path)
    first, _ = run(generate_once(settings, tmp_path / "cache"))
    assert server.request_count == 1 and not first.cached
    second, meter = run(generate_once(settings, tmp_path / "cache"))
    assert server.request_count == 1, "a cached reply makes no call"
    assert second.cached and second.text == first.text
    assert meter.table()[0]["cache_hits"] == 1 and meter.calls == 0


def test_concurrency_limit_is_respected(server, tmp_path):
    server.latency = 0.2
    settings = settings_for("openai", server, tmp_path, concurrency=3)

    async def many():
        generator = Generator(settings, "llm")
        prompt = load_prompt("correct_slide")
        try:
            calls = [
                generator.generate("correct_slide", prompt, {"slide_number": i, "document": "d", "slide_markdown": f"s{i}"}, heuristic=lambda: "")
                for i in range(9)
            ]
            started = time.monotonic()
            await asyncio.gather(*calls)
            return time.monotonic() - started
        finally:
            await generator.aclose()

    elapsed = run(many())
    assert elapsed >= 0.55, "9 calls of 0.2 s, at most 3 at a time, take at least 3 rounds"
    assert server.request_count == 9


SLIDE_VARIABLES = {"document": "deck.pptx", "slide_number": 1, "slide_markdown": "# T\n\n- a"}


def test_heuristic_provider_is_labelled_as_rules(tmp_path):
    async def go():
        generator = Generator(Settings(root=tmp_path), "llm")
        return await generator.generate("correct_slide", load_prompt("correct_slide"), SLIDE_VARIABLES, heuristic=lambda: "# T\n\n- a")

    generation = run(go())
    assert (generation.provider, generation.model) == ("heuristic", "ragprep-rules-1")
    assert generation.prompt_ref == "heuristic:correct_slide@ragprep-rules-1" and generation.prompt_sha256 is None
    assert generation.text == "# T\n\n- a"


def test_heuristic_provider_renders_the_prompt_strictly(tmp_path):
    """The offline path renders prompts like a remote one: a missing or unknown variable is an error."""

    async def go(variables):
        generator = Generator(Settings(root=tmp_path), "llm")
        return await generator.generate("correct_slide", load_prompt("correct_slide"), variables, heuristic=lambda: "x")

    with pytest.raises(PromptError, match="missing variable.*slide_markdown"):
        run(go({"document": "deck.pptx", "slide_number": 1}))
    with pytest.raises(PromptError, match="unknown variable.*slide_title"):
        run(go({**SLIDE_VARIABLES, "slide_title": "T"}))


def test_heuristic_backend_answers_with_the_attached_rule():
    from ragprep.engines.chat import ChatRequest, ProviderError
    from ragprep.engines.heuristic_backend import HeuristicChat

    backend = HeuristicChat()
    reply = run(backend.chat(ChatRequest(system="s", user="u", rule=lambda: {"pairs": []})))
    assert reply.data == {"pairs": []} and reply.text == '{"pairs": []}' and reply.model == "ragprep-rules-1"
    with pytest.raises(ProviderError, match="no offline rule"):
        run(backend.chat(ChatRequest(system="s", user="u")))


# --- privacy guard ----------------------------------------------------------------

@pytest.mark.parametrize("url", ["https://api.openai.com/v1", "http://10.20.30.40:8000/v1", "http://llm.example.com/v1"])
def test_privacy_guard_refuses_non_allowed_hosts(url, tmp_path):
    settings = Settings(root=tmp_path, llm={"provider": "openai", "model": "m", "base_url": url})
    with pytest.raises(PrivacyGuardError, match="RAGPREP_LLM__ALLOWED_HOSTS"):
        build_backend(settings, "llm")


def test_privacy_guard_refuses_anthropic_api_by_default(tmp_path):
    with pytest.raises(PrivacyGuardError, match="api.anthropic.com"):
        build_backend(Settings(root=tmp_path, llm={"provider": "anthropic", "model": "claude"}), "llm")
    with pytest.raises(PrivacyGuardError, match="bedrock-runtime.eu-central-1.amazonaws.com"):
        build_backend(Settings(root=tmp_path, llm={"provider": "anthropic", "model": "c", "anthropic_bedrock": True, "aws_region": "eu-central-1"}), "llm")


def test_privacy_guard_allows_loopback_and_allow_list(tmp_path):
    assert check_endpoint("http://127.0.0.1:8000/v1", [], "openai") == "127.0.0.1"
    assert check_endpoint("http://localhost:11434/v1", [], "openai") == "localhost"
    assert check_endpoint("http://[::1]:8000/v1", [], "openai") == "::1"
    allowed = Settings(root=tmp_path, llm={"provider": "openai", "model": "m", "base_url": "http://llm.internal.example:8000/v1", "allowed_hosts": ["llm.internal.example"]})
    backend = build_backend(allowed, "llm")
    assert backend.endpoint == "http://llm.internal.example:8000/v1"
    run(backend.aclose())


def test_vlm_role_uses_its_own_provider(tmp_path, server):
    settings = Settings(root=tmp_path, llm={"provider": "heuristic", "vlm_provider": "openai", "vlm_model": "vision", "base_url": server.openai_base_url})
    assert build_backend(settings, "llm").name == "heuristic"
    backend = build_backend(settings, "vlm")
    assert (backend.name, backend.model) == ("openai", "vision")
    run(backend.aclose())


# --- prompts ----------------------------------------------------------------------

def test_prompts_are_strict_and_versioned(tmp_path):
    prompt = load_prompt("correct_slide")
    assert prompt.ref == "correct_slide@1" and len(prompt.sha256) == 64
    with pytest.raises(PromptError, match="missing variable.*slide_markdown"):
        prompt.render({"slide_number": 1, "document": "d"})
    with pytest.raises(PromptError, match="unknown variable.*slide_text"):
        prompt.render({"slide_number": 1, "document": "d", "slide_markdown": "x", "slide_text": "typo"})
    folder = tmp_path / "p" / "demo"
    folder.mkdir(parents=True)
    (folder / "v1.toml").write_text('id = "demo"\nversion = 1\nsystem = "s"\nuser = "{{ a }}"\n')
    (folder / "v2.toml").write_text('id = "demo"\nversion = 2\nsystem = "s"\nuser = "{{ a }} {{ b }}"\n')
    assert load_prompt("demo", prompts_dir=tmp_path / "p").version == 2
    assert load_prompt("demo", 1, prompts_dir=tmp_path / "p").render({"a": "x"}) == ("s", "x")
    (folder / "v3.toml").write_text('id = "demo"\nversion = 3\nsystem = "s"\nuser = "{{ a "\n')
    with pytest.raises(PromptError, match="syntax"):
        load_prompt("demo", prompts_dir=tmp_path / "p")


def test_usage_meter_costs(tmp_path):
    from ragprep.settings import ModelPrice

    meter = UsageMeter(prices={"m": ModelPrice(input_per_mtok=2.0, output_per_mtok=10.0)})
    meter.add("openai", "m", calls=1, input_tokens=1000, output_tokens=500)
    meter.add("openai", "other", calls=1, input_tokens=10, output_tokens=5)
    rows = {r["model"]: r for r in meter.table()}
    assert rows["m"]["cost_usd"] == pytest.approx(0.007)
    assert rows["other"]["cost_usd"] is None


# --- structured-output negotiation (openai) ------------------------------------------------

from ragprep.engines.structured import ModeMemory  # noqa: E402
from tests.fake_llm_server import LLAMA_CPP_FORMATS  # noqa: E402


@pytest.fixture
def fresh_modes():
    """No mode remembered in this process before or after the test (the files under tmp_path stay)."""
    ModeMemory.forget()
    yield
    ModeMemory.forget()


def formats_sent(server: FakeLLMServer) -> list[str | None]:
    return [(r["json"].get("response_format") or {}).get("type") for r in server.requests]


def slide(n: int) -> dict:
    return {"slide_number": n, "document": "deck.pptx", "slide_markdown": f"# Slide {n}\n\nHIC15 412.6"}


def test_json_schema_is_tried_first_and_carries_the_output_model(server, tmp_path, fresh_modes):
    server.responder = lambda body, api: json.dumps({"value": "ok"})
    generation, meter = run(generate_once(settings_for("openai", server, tmp_path), tmp_path / "cache", output_model=Reply))
    assert generation.data == {"value": "ok"} and server.request_count == 1
    sent = server.requests[0]["json"]["response_format"]
    assert sent["type"] == "json_schema" and sent["json_schema"]["name"] == "Reply"
    assert sent["json_schema"]["schema"] == Reply.model_json_schema()
    assert meter.table()[0]["structured_mode"] == "json_schema"


def test_llama_cpp_server_falls_back_to_json_object_and_is_remembered(server, tmp_path, fresh_modes):
    server.accepted_formats = LLAMA_CPP_FORMATS
    server.responder = lambda body, api: json.dumps({"value": "ok"})
    settings = settings_for("openai", server, tmp_path)

    async def two_items():
        generator = Generator(settings, "llm", cache_dir=tmp_path / "cache")
        prompt = load_prompt("correct_slide")
        try:
            first = await generator.generate("s", prompt, slide(1), heuristic=lambda: "", output_model=Reply)
            requests_after_first = server.request_count
            second = await generator.generate("s", prompt, slide(2), heuristic=lambda: "", output_model=Reply)
            return first, second, requests_after_first, generator.meter
        finally:
            await generator.aclose()

    first, second, after_first, meter = run(two_items())
    assert first.data == second.data == {"value": "ok"} and first.flag is None and second.flag is None
    assert formats_sent(server) == ["json_schema", "json_object", "json_object"]
    assert after_first == 2, "json_schema refused with a 500, then json_object"
    assert server.requests[1]["json"]["response_format"]["schema"] == Reply.model_json_schema()
    row = meter.table()[0]
    assert row["structured_mode"] == "json_object" and row["calls"] == 2 and row["failures"] == 0
    assert json.loads((tmp_path / "cache" / "modes.json").read_text()) == {f"{server.openai_base_url} test-model": "json_object"}


def test_negotiated_mode_persists_across_generators(server, tmp_path, fresh_modes):
    server.accepted_formats = LLAMA_CPP_FORMATS
    server.responder = lambda body, api: json.dumps({"value": "ok"})
    settings = settings_for("openai", server, tmp_path)
    run(generate_once(settings, tmp_path / "cache", output_model=Reply, variables=slide(1)))
    assert server.request_count == 2
    ModeMemory.forget()  # a new process: only the file under the root's cache remembers
    server.reset()
    generation, meter = run(generate_once(settings, tmp_path / "cache", output_model=Reply, variables=slide(2)))
    assert generation.data == {"value": "ok"}
    assert formats_sent(server) == ["json_object"], "straight to the remembered mode"
    assert meter.table()[0]["structured_mode"] == "json_object"


def test_server_refusing_every_format_falls_to_prompt_only(server, tmp_path, fresh_modes):
    server.accepted_formats = ()
    server.responder = lambda body, api: 'Sure: {"value": "by prompt"}'
    settings = settings_for("openai", server, tmp_path)
    generation, meter = run(generate_once(settings, tmp_path / "cache", output_model=Reply, variables=slide(1)))
    assert generation.data == {"value": "by prompt"} and generation.flag is None
    assert formats_sent(server) == ["json_schema", "json_object", None]
    assert meter.table()[0]["structured_mode"] == "prompt"
    server.reset()
    again, _ = run(generate_once(settings, tmp_path / "cache", output_model=Reply, variables=slide(2)))
    assert again.data == {"value": "by prompt"} and formats_sent(server) == [None]


def test_prompt_only_reply_that_is_not_json_gets_the_repair(server, tmp_path, fresh_modes):
    server.accepted_formats = ()
    server.enqueue_faults([("status", 500, {}), ("status", 422, {}), ("content", "def main(): pass")])
    server.responder = lambda body, api: json.dumps({"value": "repaired"})
    generation, meter = run(generate_once(settings_for("openai", server, tmp_path), tmp_path / "cache", output_model=Reply))
    assert generation.data == {"value": "repaired"}
    assert formats_sent(server) == ["json_schema", "json_object", None, None]
    assert meter.table()[0]["repairs"] == 1 and meter.table()[0]["structured_mode"] == "prompt"


def test_a_stale_remembered_mode_falls_back_and_is_relearned(server, tmp_path, fresh_modes):
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "modes.json").write_text(json.dumps({f"{server.openai_base_url} test-model": "json_schema"}))
    server.accepted_formats = LLAMA_CPP_FORMATS
    server.responder = lambda body, api: json.dumps({"value": "ok"})
    generation, _ = run(generate_once(settings_for("openai", server, tmp_path, retries=0), cache, output_model=Reply))
    assert generation.data == {"value": "ok"} and formats_sent(server) == ["json_schema", "json_object"]
    assert json.loads((cache / "modes.json").read_text())[f"{server.openai_base_url} test-model"] == "json_object"


@pytest.mark.parametrize("status", [429, 503])
def test_busy_server_during_negotiation_is_retried_not_downgraded(status, server, tmp_path, fresh_modes):
    server.enqueue_faults([("status", status, {"Retry-After": "0"})])
    server.responder = lambda body, api: json.dumps({"value": "ok"})
    generation, meter = run(generate_once(settings_for("openai", server, tmp_path), tmp_path / "cache", output_model=Reply))
    assert generation.data == {"value": "ok"}
    assert formats_sent(server) == ["json_schema", "json_schema"]
    assert meter.table()[0]["structured_mode"] == "json_schema"


def test_context_length_error_is_not_a_format_refusal(server, tmp_path, fresh_modes):
    server.enqueue_faults([("status", 400, {}, "Requested tokens (5000) exceed context window of 4096")])
    generation, meter = run(generate_once(settings_for("openai", server, tmp_path), tmp_path / "cache", output_model=Reply))
    assert generation.flag.startswith("call_failed:") and "context window" in generation.flag
    assert server.request_count == 1 and meter.table()[0]["failures"] == 1
    assert not (tmp_path / "cache" / "modes.json").exists()


def test_text_requests_send_no_format_and_keep_their_cache_key(server, tmp_path, fresh_modes):
    from ragprep.ids import stable_id

    server.accepted_formats = ()
    settings = settings_for("openai", server, tmp_path)
    generation, meter = run(generate_once(settings, tmp_path / "cache"))
    assert generation.flag is None and formats_sent(server) == [None]
    assert meter.table()[0]["structured_mode"] is None
    prompt = load_prompt("correct_slide")
    system, user = prompt.render({"slide_number": 1, "document": "deck.pptx", "slide_markdown": "# Title\n\nHIC15 412.6"})
    key = stable_id("chat", "openai", "test-model", prompt.sha256, system, user, [], False, settings.llm.max_output_tokens, 0.0)
    assert (tmp_path / "cache" / key[:2] / f"{key}.json").exists(), "the key of a text reply did not change"


def test_anthropic_json_requests_are_recorded_as_prompt_mode(server, tmp_path, fresh_modes):
    server.responder = lambda body, api: json.dumps({"value": "ok"})
    generation, meter = run(generate_once(settings_for("anthropic", server, tmp_path), output_model=Reply))
    assert generation.data == {"value": "ok"} and meter.table()[0]["structured_mode"] == "prompt"
    assert "response_format" not in server.requests[0]["json"]
