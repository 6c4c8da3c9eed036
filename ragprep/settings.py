"""The one settings object of ragprep.

Built once at an entry point (CLI command, Prefect flow) and passed down; nothing in
ragprep reads the environment at import time.  Sources, highest priority first:
explicit keyword arguments, ``RAGPREP_*`` environment variables, a ``ragprep.toml``
file (``RAGPREP_CONFIG`` names another), then the defaults below.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import os
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

DocType = Literal["test_report", "meeting_note", "textbook", "other"]
ProviderName = Literal["heuristic", "openai", "anthropic"]


class ModelPrice(BaseModel):
    """USD per million tokens, for the per-run cost estimate."""

    input_per_mtok: float
    output_per_mtok: float


class DocTypeRule(BaseModel):
    """A glob over the file name (case-insensitive) and the document type it implies."""

    pattern: str
    doc_type: DocType


DEFAULT_DOC_TYPE_RULES: list[DocTypeRule] = [
    DocTypeRule(pattern="*crash*", doc_type="test_report"),
    DocTypeRule(pattern="*test_report*", doc_type="test_report"),
    DocTypeRule(pattern="*시험*", doc_type="test_report"),
    DocTypeRule(pattern="*meeting*", doc_type="meeting_note"),
    DocTypeRule(pattern="*minutes*", doc_type="meeting_note"),
    DocTypeRule(pattern="*회의*", doc_type="meeting_note"),
    DocTypeRule(pattern="*.pdf", doc_type="textbook"),
]


MAX_WORKERS = 16
"""Documents processed at once, at most: the flows' task pools have this many threads."""

_GROUP = ConfigDict(extra="forbid", frozen=True)


class OcrSettings(BaseModel):
    """Tesseract OCR of pictures and of PDF pages without usable text (env ``RAGPREP_OCR__*``)."""

    model_config = _GROUP
    enabled: bool = Field(True, description="Run Tesseract on pictures and on PDF pages without usable text.")
    languages: str = Field("kor+eng", description="Tesseract language list.")
    min_confidence: float = Field(
        50.0,
        description="OCR lines whose mean word confidence is below this are dropped "
        "(per line, not per word: Tesseract scores correct numbers as low as 15).",
    )
    min_chars: int = Field(4, description="A picture 'carries text' when OCR keeps at least this many letters/digits ...")
    min_mean_confidence: float = Field(60.0, description="... at this mean word confidence or more.")
    dpi: int = Field(200, ge=72, le=600, description="Render resolution for OCR of PDF pages.")
    max_side_px: int = Field(3000, ge=500, description="Rendered pages are scaled down so their longest side fits this.")
    min_image_px: int = Field(64, description="Pictures smaller than this (either side, pixels) are not OCR'd.")


class PdfSettings(BaseModel):
    """Reading PDF books (env ``RAGPREP_PDF__*``)."""

    model_config = _GROUP
    garbage_threshold: float = Field(
        0.30, description="A PDF page whose text has more than this share of unreadable characters is OCR'd."
    )
    min_text_chars: int = Field(20, description="A PDF page with fewer extracted characters counts as having no text layer.")
    fallback_window: int = Field(10, ge=1, description="Pages per chunk when neither outline nor headings give chapters.")
    dominant_chapter_share: float = Field(
        0.6, description="An outline chapter covering more than this share of pages is split at its sections."
    )
    dominant_chapter_min_pages: int = Field(10, ge=1, description="... and at least this many pages.")
    tables: bool = Field(True, description="Detect tables on PDF pages.")
    save_images: bool = Field(True, description="Save embedded PDF images (content-addressed).")
    max_image_pixels: int = Field(
        16_000_000, ge=100_000, description="Embedded PDF images larger than this are stored halved until they fit."
    )


class ChunkingSettings(BaseModel):
    """Chunk sizes (env ``RAGPREP_CHUNKING__*``)."""

    model_config = _GROUP
    max_tokens: int = Field(
        1500, ge=50, description="Token budget of one chunk; longer chapters split at sub-headings, then between sentences."
    )


class LlmSettings(BaseModel):
    """LLM and VLM providers, the privacy guard and call limits (env ``RAGPREP_LLM__*``)."""

    model_config = _GROUP
    provider: ProviderName = Field("heuristic", description="Text steps (correct, headers, qa): heuristic | openai | anthropic.")
    model: str = Field("", description="Model name for openai/anthropic (e.g. qwen2.5-7b-instruct on vLLM).")
    vlm_provider: ProviderName | None = Field(None, description="Image descriptions; default: the provider above.")
    vlm_model: str = Field("", description="Vision model name; default: model.")
    base_url: str | None = Field(
        None, description="OpenAI-compatible endpoint (vLLM, Ollama, TGI, LM Studio), e.g. http://127.0.0.1:8000/v1."
    )
    api_key: SecretStr | None = Field(None, description="API key for the endpoint (local servers usually accept any).")
    anthropic_base_url: str | None = Field(None, description="Anthropic API base URL (default https://api.anthropic.com).")
    anthropic_bedrock: bool = Field(False, description="Call Claude through AWS Bedrock (AnthropicBedrock) instead of the API.")
    aws_region: str | None = Field(None, description="AWS region for Bedrock.")
    allowed_hosts: list[str] = Field(
        default_factory=list,
        description="Privacy guard: hosts besides loopback that may receive document text (e.g. llm.internal.example).",
    )
    concurrency: int = Field(8, ge=1, le=256, description="LLM calls in flight at once.")
    requests_per_minute: float = Field(3000.0, gt=0, description="Rate limit on LLM calls (leaky bucket, bursts up to this many).")
    timeout_s: float = Field(60.0, gt=0, description="Per-call timeout in seconds.")
    max_retries: int = Field(
        4, ge=0, le=10, description="SDK retries on 429/5xx/timeouts (exponential backoff with jitter, Retry-After honoured)."
    )
    max_output_tokens: int = Field(2048, ge=16, description="max_tokens per call.")
    prices: dict[str, ModelPrice] = Field(default_factory=dict, description="Per-model prices for the cost estimate.")


class HeaderSettings(BaseModel):
    """Report headers of test reports (env ``RAGPREP_HEADERS__*``)."""

    model_config = _GROUP
    fields: list[str] = Field(
        default_factory=lambda: ["Test Name", "Region", "Stage", "Purpose"],
        description="Header fields extracted per test report (the paper's third field 'State' is 'Stage' here).",
    )
    slides: int = Field(2, ge=1, le=10, description="Slides of a test report read for its header.")


class QaSettings(BaseModel):
    """QA generation and flags (env ``RAGPREP_QA__*``)."""

    model_config = _GROUP
    tokens_per_pair: int = Field(70, ge=10, description="One QA pair per this many chunk tokens ...")
    max_per_chunk: int = Field(15, ge=1, description="... capped at this many per chunk.")
    auto_approve: bool = Field(True, description="Pairs without flags are approved without review.")
    duplicate_threshold: float = Field(
        90.0, ge=50, le=100, description="rapidfuzz token_set_ratio at or above which two questions are near-duplicates."
    )
    support_threshold: float = Field(
        0.8, ge=0, le=1, description="Share of the answer's words that must occur in the chunk (else unsupported_answer)."
    )
    min_question_chars: int = Field(12, ge=1, description="Shorter questions are flagged too_short.")
    max_question_chars: int = Field(300, ge=20, description="Longer questions are flagged too_long.")
    max_answer_chars: int = Field(600, ge=20, description="Longer answers are flagged too_long.")
    critic_min_score: int = Field(
        3, ge=1, le=5, description="judge: a pair is auto-approved only when every critic score (1-5) is at least this."
    )
    spot_check_share: float = Field(
        0.1, ge=0, le=1, description="Review report: share of auto-approved pairs drawn at random for expert spot checks ..."
    )
    spot_check_min: int = Field(20, ge=0, description="... and at least this many (all of them when there are fewer).")


class QuoteSettings(BaseModel):
    """MMDocRAG quotes (env ``RAGPREP_QUOTES__*``)."""

    model_config = _GROUP
    layout_backend: Literal["pymupdf-layout", "mineru"] = Field(
        "pymupdf-layout",
        description="Layout of PDF pages into quotes: pymupdf-layout (model shipped in its wheel, offline) | mineru "
        "(needs the mineru command and its models; an error names what is missing, no silent fallback).",
    )
    mineru_models_dir: Path | None = Field(None, description="MinerU pipeline models folder (default: models-dir of ~/mineru.json).")
    crop_dpi: int = Field(144, ge=72, le=400, description="Resolution of the rendered crops of image quotes.")


class NegativesSettings(BaseModel):
    """Candidate sets: gold quotes and hard negatives (env ``RAGPREP_NEGATIVES__*``)."""

    model_config = _GROUP
    candidate_sets: list[tuple[int, int]] = Field(
        default_factory=lambda: [(10, 5), (12, 8)],
        description="(text, image) quotes per candidate set: MMDocRAG's 15 = 10 + 5 and 20 = 12 + 8.",
    )
    seed: int = Field(20250601, description="Seed of the deterministic shuffle of each candidate set.")
    bm25_weight: float = Field(
        0.5, ge=0, le=1, description="Weight of BM25 (max-normalised per question) against dense cosine in the hybrid score."
    )
    guard_margin: float = Field(
        0.15, ge=0, le=1, description="False-negative guard: skip a candidate scoring above the weakest gold by more than this."
    )
    min_chars: int = Field(30, ge=0, description="Text quotes shorter than this are never used as negatives.")
    same_split: bool = Field(
        True,
        description="Negatives come only from quotes in the question's own split (train/val/test, by the same hash as the "
        "dataset), so a test quote is never taught as irrelevant in train; smaller pools may leave sets short.",
    )
    gold_min_support: float = Field(
        0.6, ge=0, le=1, description="A quote is gold when it holds at least this share of the answer's words."
    )
    gold_max: int = Field(3, ge=1, le=10, description="At most this many gold quotes per question (the best supported).")
    multi_quote_items_per_doc: int = Field(
        3, ge=0, description="Questions written across 2-3 quotes of one document, per document and split (multi-quote items)."
    )


class DatasetSettings(BaseModel):
    """Splits and the quality gate of dataset versions (env ``RAGPREP_DATASET__*``)."""

    model_config = _GROUP
    split_ratios: dict[str, float] = Field(
        default_factory=lambda: {"train": 0.8, "val": 0.1, "test": 0.1},
        description="Split shares; assignment hashes the chunk (or document) id, so an item never changes split.",
    )
    split_by: Literal["chunk", "document"] = Field("chunk", description="Unit hashed for the split assignment.")
    split_share_tolerance: float = Field(
        0.1, ge=0, le=1, description="Quality gate: each split's share may differ from its ratio by this much."
    )
    chunk_token_bounds: tuple[int, int] = Field((1, 4000), description="Quality gate: allowed chunk token counts.")


OPERATIONAL_FIELDS = frozenset({"root", "workers", "dataset_uri"})
"""Where outputs go and how fast: they never change what is produced, so no fingerprint includes them."""

EXTRACTION_GROUPS = ("ocr", "pdf", "chunking")
"""What changes extraction and chunking: these key the per-document parts."""


class Settings(BaseSettings):
    """Every knob of ragprep, in groups, with defaults that work offline on a fresh machine.

    Environment variables name a group and a field with a double underscore:
    ``RAGPREP_OCR__ENABLED=false``, ``RAGPREP_LLM__PROVIDER=openai``; top-level fields take one:
    ``RAGPREP_ROOT``, ``RAGPREP_WORKERS``, ``RAGPREP_DATASET_URI``. In ``ragprep.toml`` each group
    is a table (``[ocr]``, ``[llm]``, ...).
    """

    model_config = SettingsConfigDict(
        env_prefix="RAGPREP_",
        env_nested_delimiter="__",
        toml_file="ragprep.toml",
        extra="forbid",
        frozen=True,
    )

    root: Path = Field(Path("ragprep-data"), description="Where every output of ragprep lives.")
    workers: int = Field(2, ge=1, le=MAX_WORKERS, description="Documents processed at once (thread pool).")
    dataset_uri: str | None = Field(
        None,
        description="Where dataset versions live: a local path or s3://bucket/prefix (S3 connection from the standard "
        "AWS_ENDPOINT_URL / AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY / AWS_REGION environment); default <root>/datasets.",
    )
    doc_type_rules: list[DocTypeRule] = Field(
        default_factory=lambda: list(DEFAULT_DOC_TYPE_RULES),
        description="First matching glob (on the file name) decides the document type.",
    )
    ocr: OcrSettings = Field(default_factory=OcrSettings)
    pdf: PdfSettings = Field(default_factory=PdfSettings)
    chunking: ChunkingSettings = Field(default_factory=ChunkingSettings)
    llm: LlmSettings = Field(default_factory=LlmSettings)
    headers: HeaderSettings = Field(default_factory=HeaderSettings)
    qa: QaSettings = Field(default_factory=QaSettings)
    quotes: QuoteSettings = Field(default_factory=QuoteSettings)
    negatives: NegativesSettings = Field(default_factory=NegativesSettings)
    dataset: DatasetSettings = Field(default_factory=DatasetSettings)

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        """Explicit arguments, then ``RAGPREP_*`` variables, then ``ragprep.toml`` (``RAGPREP_CONFIG`` names another)."""
        toml_path = os.environ.get("RAGPREP_CONFIG", "ragprep.toml")
        return (init_settings, env_settings, TomlConfigSettingsSource(settings_cls, toml_file=toml_path))

    def doc_type_for(self, path: Path | str) -> DocType:
        """The document type of a file: the first matching glob rule, else ``other``."""
        name = Path(path).name.lower()
        for rule in self.doc_type_rules:
            if fnmatch.fnmatch(name, rule.pattern.lower()):
                return rule.doc_type
        return "other"

    def replace(self, **groups: dict[str, object]) -> Settings:
        """A copy with some fields of some groups changed: ``settings.replace(ocr={"enabled": False})``."""
        return self.model_copy(update={name: getattr(self, name).model_copy(update=values) for name, values in groups.items()})

    def fingerprint(self, *groups: str) -> str:
        """Hash of the named groups (default: every setting but the operational ones), 12 hex digits."""
        names = set(groups) if groups else set(type(self).model_fields) - OPERATIONAL_FIELDS
        relevant = self.model_dump(mode="json", include=names)
        return hashlib.sha256(json.dumps(relevant, sort_keys=True, default=str).encode()).hexdigest()[:12]

    def extraction_fingerprint(self) -> str:
        """Hash of the settings that change what extraction produces (not where it goes)."""
        return self.fingerprint(*EXTRACTION_GROUPS)


def build_settings(
    root: str | Path | None = None, workers: int | None = None, ocr: bool | None = None, **overrides: object
) -> Settings:
    """The one way entry points (CLI commands, Prefect flows) build settings: environment and
    ``ragprep.toml``, with the explicit parameters that were given on top."""
    given: dict[str, object] = {k: v for k, v in overrides.items() if v is not None}
    if root is not None:
        given["root"] = Path(root)
    if workers is not None:
        given["workers"] = workers
    if ocr is not None:
        given["ocr"] = {"enabled": ocr}
    return Settings(**given)
