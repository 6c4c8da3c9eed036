"""Running `unstructured` as a benchmark peer on a machine without internet access.

unstructured (0.27, the version this was written against) classifies text with a spaCy pipeline (``en_core_web_sm``) that it
downloads from GitHub the first time it needs it.  Offline the download fails, and:

* ``partition_pdf`` swallows the error (logged at DEBUG level) and returns **no
  elements at all**, without raising;
* ``partition_pptx`` raises ``RuntimeError: Failed to download spaCy model ...``.

This module detects that situation and, when asked, installs a small offline stand-in
for the missing model: a blank spaCy English pipeline (rule-based tokenizer) with the
rule-based ``sentencizer`` and a crude verb guesser (a short list of common English
verbs and auxiliaries, plus ``-ed``/``-ing`` endings), so that unstructured's
"narrative text vs. title" heuristics still have sentence boundaries and verb tags.
The stand-in is cheaper than ``en_core_web_sm`` (no tok2vec/tagger/parser network),
so a benchmark using it flatters unstructured's speed, never ragprep's.
"""

from __future__ import annotations

import importlib.util
import os

MODEL_NAME = "en_core_web_sm"
STANDIN_DESCRIPTION = (
    "offline stand-in for spaCy en_core_web_sm: blank 'en' pipeline + sentencizer + "
    "rule-based verb guesser (cheaper than the real model, so it flatters unstructured's speed)"
)

# Words tagged as verbs by the stand-in.  Enough for unstructured's "contains a verb"
# test (narrative text needs one); not a real part-of-speech tagger.
_COMMON_VERBS = frozenset(
    """
    is are was were be been being am has have had having do does did done can could
    will would shall should may might must need needs provide provides provided use uses
    make makes made take takes took get gets got give gives gave show shows shown see
    sees saw seen find finds found run runs ran include includes require requires allow
    allows help helps become becomes became keep keeps let lets begin begins seem seems
    apply applies support supports describe describes contain contains represent
    represents mean means know knows say says said go goes went come comes came
    """.split()
)


def silence_network_side_effects() -> None:
    """Opt out of unstructured's analytics ping and usage notice (set before importing it).

    Without this, every ``partition`` call tries a telemetry request (0.5 s timeouts),
    which offline would be charged to unstructured's timings.
    """
    os.environ.setdefault("DO_NOT_TRACK", "1")
    os.environ.setdefault("SCARF_NO_ANALYTICS", "1")
    os.environ.setdefault("UNSTRUCTURED_DISABLE_NOTICE", "1")


def real_model_installed() -> bool:
    return importlib.util.find_spec(MODEL_NAME) is not None


def _standin_pipeline():
    import spacy
    from spacy.language import Language

    component = "ragprep_bench_verb_guesser"
    if component not in Language.factories:

        @Language.component(component)
        def _guess_verbs(doc):
            for token in doc:
                lower = token.lower_
                if lower in _COMMON_VERBS or (
                    token.is_alpha and len(lower) > 4 and lower.endswith(("ed", "ing"))
                ):
                    token.tag_ = "VB"
            return doc

    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    nlp.add_pipe(component)
    return nlp


def install_standin() -> None:
    """Make unstructured use the stand-in pipeline instead of downloading the model."""
    from unstructured.nlp import tokenize

    nlp = _standin_pipeline()
    # unstructured's tokenize helpers look `_get_nlp` up as a module global on each call.
    tokenize._get_nlp = lambda: nlp
    for name in ("_process_cached", "word_tokenize", "pos_tag", "_tokenize_for_cache"):
        cached = getattr(tokenize, name, None)
        if cached is not None and hasattr(cached, "cache_clear"):
            cached.cache_clear()
