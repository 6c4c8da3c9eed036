"""Coverage rules: questions for the fact chunks of regulations and protocols that no other generator rule reads.

The other provision rules ask a paragraph's value, its "shall" requirement, its definition or its condition. A
procedure section states its facts differently, and a chunk of one then got no question at all (qa-cov's run over
the corpus: about a third of the chunks holding a fact got no pair, most of them test-procedure and set-up text):

- ``generate.coverage.procedure_step``: a numbered paragraph or lettered item whose text is an instruction in the
  imperative ("S8.3.3.1 Lumbar support adjustment. Position adjustable lumbar supports so that ..."; "(a) Torso.
  Hold the dummy's head in place and push laterally ... with a force of 66.7-89.0 N"). Asked: "What does paragraph
  S8.3.3.1 (Lumbar support adjustment) of FMVSS No. 214 prescribe?" -> the step as written.
- ``generate.coverage.provision_statement``: a titled paragraph or item that states how the test is set up or what
  a device is, in the present tense without "shall" ("S11.3 The stabilized temperature of the test dummy at the time
  of the test is at any temperature between 20.6 degrees C and 22.2 degrees C."). Asked: "What does paragraph S11.3
  (...) of FMVSS No. 214 specify?" -> that statement.
- ``generate.protocol.test_condition`` (``tasks.qa.rules.protocols``) and ``generate.requirement.stated_value``
  (``tasks.qa.rules.requirements``: "The front plates are 1,500 ± 1 mm wide and 250 ± 1 mm high." -> "what are the
  dimensions of the front plates?"), each under 0.85 usable on documents it was not written from.

They are a fallback: ``coverage_candidates`` is asked only for a chunk the other rules give no question, and only with
the setting ``qa.coverage_rules`` (off by default; see ``tasks.qa.generate.generate_for_chunk``), so they add pairs
where there were none and change no other pair. Off by default because, labelled by hand on documents they were not
written from (R95, R16, Euro NCAP CP 008-1, FMVSS 301; ``tests/data/qa_labels_gen_round9.jsonl``), they were 14/20
(procedure steps) and 21/29 (statements) usable before the checks below that those labels prompted, and 17/29 and 51/84
when each of those documents is judged without the checks written from it (leave one document out). Nothing
is asked without a document handle and a paragraph number, of administrative paragraphs (approval, phase-in,
transitional provisions), of a pointer-only text ("Position the dummy as specified in S8.2."), nor of a garbled one.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import replace

from ragprep.text import verbatim_span
from tasks.qa.registry import rule
from tasks.qa.rules.pointers import not_its_own
from tasks.qa.rules.protocols import test_condition_candidates
from tasks.qa.rules.provisions import (
    MAX_SENTENCE_CHARS,
    Unit,
    _reference,
    _title,
    administrative,
    garbled,
    provision_units,
)
from tasks.qa.rules.requirements import stated_value_candidates
from tasks.qa.rules.text import Candidate, ChunkView, doc_phrase

MAX_STEP_CHARS = 400
"""A step up to this long is answered whole; a longer one by its first sentence ("What is the first step ...")."""

_IMPERATIVES = frozenset("""
adjust align apply attach bend calculate check clamp close conduct connect determine draw drive ensure extend fasten
fill filter fix hold inflate install keep level locate lock lower maintain mark measure mount move open orient place
position prepare process pull push raise recline record release remove repeat rest retract rotate secure select set straighten
subsample support tighten tilt turn unlock use verify
""".split())
"""Verbs that open a test-procedure instruction ("Position ...", "Record applied load ...")."""

_LEADING_CONDITION_RE = re.compile(r"^(?:For|From|If|When|Where|After|Before|Using|With|Without|Unless|Except)\b[^.;]{0,160},\s+"
                                   r"(?P<verb>[a-z]+)\b")
"""An instruction after a leading condition ("For the driver's seating position, without inducing pelvis or torso
movement, place the right foot ..."): the condition stays in the answer, so it is not lost."""

_STATEMENT_VERB_RE = re.compile(r"\b(?:is|are|rests?|coincides?|consists?|covers?|weighs?|has|have|includes?|"
                                r"passes|lies|lie|contains?)\b")
"""A present-tense statement of the set-up ("The upper legs of each test dummy rest against the seat cushion ...")."""
_NOT_STATEMENT_RE = re.compile(r"\b(?:shall|must|means|refers? to|is defined as|may|need not|is not required|should)\b"
                               r"|^(?:The term|This|These|It|They|Such|However)\b", re.IGNORECASE)
"""Requirements, definitions, permissions and continuations are other rules' (or no question's) business."""
_POINTER_ONLY_RE = re.compile(r"\b(?:in accordance with|according to|as (?:specified|described|shown|prescribed|set out) in|"
                              r"outlined in|"
                              r"(?:are|is) (?:specified|described|defined|given|set out|presented|listed|shown) (?:in|as))\b"
                              r"|\b(?:procedure|method|requirements?|corridors?) (?:in|of)\s+(?:(?:UN\s+)?Regulation|paragraph|"
                              r"Annex|Appendix|Figure|Table|S\d|ISO|SAE)|\b(?:table|figure) (?:below|above)\b|\bthe following\b"
                              r"|\bas follows\b|:\s*$"
                              r"|\b(?:described|specified|shown|given|listed|defined|set out|stated|summari[sz]ed|outlined)"
                              r" below\b",
                              re.IGNORECASE)
"""A statement whose content is where its facts are ("target SR3 is located in accordance with this paragraph", "are
specified in 49 CFR part 572") or a lead-in to a list: no fact of its own."""
_LOST_GLYPH_RE = re.compile(r"[\w%°]\s{2,}\d|[\ue000-\uf8ff]|\b(?:mm|cm|kg|kN|N|g|ms|s|m)\.\d+\s+[A-Z]")
"""A glyph the PDF's font dropped or left undecoded: two spaces before a number ("100 N  10 N" for "100 N ± 10 N",
"elongation  12 per cent" for "≥ 12 per cent"), a private-use character ("position \\uf0b1 25 mm"), or a footnote mark
glued to a value ("12.7 mm.8 The impactor"): the value as written is wrong."""
_CONSTRUCTION_RE = re.compile(r"\b(?i:points?|planes?|lines?|spheres?)\s+"
                              r"(?:[A-Z]{1,3}|\d{1,3}(?![\d.,]|\s?(?:mm|cm|m|kg|N|°|%|degrees))|[a-z](?:\s?-\s?[A-Z]\s?-\s?[a-z])?)\b"
                              r"|\blines?\s+[a-z]-[A-Z]-[a-z]\b|\b[a-z]-[a-z]\b(?=\s*(?:,|and|\.))")
"""A labelled construction entity another step defines ("Point X", "Plane 25", "Point APR", "lines a-O-b and c-P-d",
"Point 17"): a step or statement that names one is a step of a geometric construction, meaningless without the steps
before it (FMVSS 201's forehead zone and target locations, UN R16's manikin figure references)."""
_SEE_ALSO_RE = re.compile(r"\((?:see|refer to)\s[^)]*\)|\(part No\.?\s?\w+\)", re.IGNORECASE)
"""A parenthetical pointer ("(see Table 1)", "(see Figures 3 and 4)", "(part No. 4h)")."""
MIN_POINTED_WORDS = 10
"""A statement with such a pointer says something of its own only in at least this many words besides it ("The
manikin is covered by a special overall (see Table 1)." is a caption of the table, not a fact)."""


def _pointer_caption(text: str) -> bool:
    """True for a second block run into the text ("Structure of the lower leg (see Figures 3 and 4)\n\nThe ...") or a
    short statement that leans on a parenthetical pointer."""
    return bool(re.search(r"\n\s*\n", text.strip())) or (
        bool(_SEE_ALSO_RE.search(text)) and len(_SEE_ALSO_RE.sub("", text).split()) < MIN_POINTED_WORDS)
_REQUIREMENT_RE = re.compile(r"\b(?:shall|must)\b")
_FASTENER_RE = re.compile(r"\b(?:mounted|attached|fixed|fastened|connected|clamped|bolted|screwed)\b[^.]*\b(?:by|with)\s+"
                          r"(?:an?|one|two|three|four|five|six|eight|\d+)\s+(?:screws?|bolts?|rivets?|pins?)\b"
                          r"|\bclamped between\b|^(?:An?|The)\s[\w\s-]{3,40}\bis located in\b(?![^.]*\d\s?(?:mm|cm|kg))",
                          re.IGNORECASE)
"""How a part is fastened or where it sits in an assembly ("The neck-bracket is mounted to the shoulder block by four
screws.", "... with four screws", "... is clamped between ...", "A tuning spring is located in the guide system
assembly."): assembly trivia."""
_SENTENCE_SPLIT_RE = re.compile(r"(?<=[.;])\s+(?=[A-Z(])")


def _split_title(unit: Unit) -> Unit:
    """An item's own inline title taken off its text ("Torso. Hold the dummy's head ..." -> title "Torso"); a title
    that is itself an instruction ("Locate a horizontal plane passing through Point X") is none."""
    if "(" not in unit.number:
        return unit
    title, body = _title(unit.text)
    if title and imperative(title):
        return Unit(unit.number, "", unit.text, unit.criterion)
    return Unit(unit.number, title, body, unit.criterion) if title and body else unit


def _untitled_step(unit: Unit) -> Unit:
    """A "title" that is itself an instruction ("(2) Fully recline the seat back, if adjustable. Install the dummy
    ...") is the item's first step: put back into its text, so the answer is not the second step alone."""
    if unit.title and imperative(unit.title):
        return Unit(unit.number, "", f"{unit.title.rstrip('.')}. {unit.text}", unit.criterion)
    return unit


def _joined(units: list[Unit]) -> list[Unit]:
    """Units of one number joined: a paragraph whose steps stand in blocks of their own ("4.2. Knee joint / Tighten
    the knee joint. / Set the thigh and lower leg vertical. / ...") is one paragraph, asked once with all its steps."""
    out: dict[str, Unit] = {}
    for unit in units:
        known = out.get(unit.number)
        out[unit.number] = Unit(unit.number, known.title or unit.title, f"{known.text} {unit.text}", known.criterion) \
            if known else unit
    return list(out.values())


def _list_items(units: list[Unit]) -> set[str]:
    """The numbers of units that are items of a list a lead-in opened ("... need not meet the requirements of S6
    for—", "... as follows:"): an item alone ("Any side door that ...") says nothing without its lead-in."""
    leads = [u.number for u in units if u.text.rstrip().endswith((":", "—", "-", "–"))]
    return {u.number for u in units if any(u.number != lead and u.number.startswith(lead) for lead in leads)}


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE_SPLIT_RE.split(text) if s.strip()]


@rule("generate.coverage.imperative", "generate", "the first sentence of a provision",
      "it opens with an instruction verb ('Position ...', 'Hold ... and push ...'), or with a leading condition and then "
      "one ('For a bench seat, place ...')")
def imperative(sentence: str) -> bool:
    """True when ``sentence`` is an instruction of a test procedure."""
    words = sentence.split(maxsplit=2) if sentence else [""]
    first = words[0].lower().strip(",")
    if first in _IMPERATIVES and sentence[:1].isupper():
        return True
    if first.endswith("ly") and len(words) > 1 and words[1].lower() in _IMPERATIVES and sentence[:1].isupper():
        return True  # "Fully recline the seat back, if adjustable.": an adverb before the verb
    found = _LEADING_CONDITION_RE.match(sentence)
    return bool(found and found.group("verb") in _IMPERATIVES)


def _usable_text(view: ChunkView, unit: Unit) -> bool:
    """A unit a question can stand on: numbered to the paragraph, not administrative, not a pointer, not garbled."""
    named = "." in unit.number or unit.number.startswith("S")
    return (named and not administrative(view, unit) and not garbled(unit.text) and not _LOST_GLYPH_RE.search(unit.text)
            and not not_its_own(_first(unit.text)) and not _POINTER_ONLY_RE.search(unit.text)
            and not _CONSTRUCTION_RE.search(unit.text) and not _pointer_caption(unit.text))


def _main_clause(sentence: str) -> str:
    """The sentence up to its first relative clause ("Any side door that is designed ..." -> "Any side door"): a verb
    there is no verb of the sentence's subject."""
    return re.split(r"\b(?:that|which|who|whose|where|when)\b|,", sentence, maxsplit=1)[0]


def _first(text: str) -> str:
    parts = _sentences(text)
    return parts[0] if parts else ""


def _step_answer(text: str) -> tuple[str, bool]:
    """(answer, whole): the step whole when short enough and complete, else its first sentence."""
    text = text.strip()
    if len(text) <= MAX_STEP_CHARS and text.endswith("."):
        return text, True
    first = _first(text)
    return (first, False) if first.endswith(".") and len(first) <= MAX_SENTENCE_CHARS else ("", False)


@rule("generate.coverage.procedure_step", "generate", "a numbered paragraph or lettered item of a regulation or "
      "protocol whose text is an instruction ('Position ...', 'For a bench seat, place ...')", "procedural")
def procedure_step_candidates(view: ChunkView) -> Iterator[Candidate]:
    """'What does paragraph S8.3.3.1 (Lumbar support adjustment) of FMVSS No. 214 prescribe?' -> the step."""
    if view.language != "en" or not doc_phrase(view):
        return
    for unit in _joined([_untitled_step(_split_title(u)) for u in provision_units(view)]):
        first = _first(unit.text)
        if not imperative(first) or _REQUIREMENT_RE.search(first) or not _usable_text(view, unit):
            continue  # "Lower tether anchorages must ...": a requirement (the requirement rules' business), not a step
        answer, whole = _step_answer(unit.text)
        answer = verbatim_span(answer, view.markdown) if answer else ""
        if answer:
            question = f"What does {_reference(view, unit)} prescribe?" if whole else \
                f"What is the first step that {_reference(view, unit)} prescribes?"
            yield Candidate(question, answer, "procedural", "text")


@rule("generate.coverage.provision_statement", "generate", "a titled numbered paragraph or item of a regulation or "
      "protocol that states the set-up in the present tense without 'shall' ('The stabilized temperature of the test "
      "dummy ... is at any temperature between 20.6 degrees C and 22.2 degrees C.')", "factual")
def provision_statement_candidates(view: ChunkView) -> Iterator[Candidate]:
    """'What does paragraph S11.3 (...) of FMVSS No. 214 specify?' -> the paragraph's statement."""
    if view.language != "en" or not doc_phrase(view):
        return
    units = _joined([_split_title(u) for u in provision_units(view)])
    items = _list_items(units)
    for unit in units:
        sentence, text = _first(unit.text), unit.text.strip()
        if (not unit.title or unit.number in items or not text.endswith(".") or len(text) > MAX_STEP_CHARS
                or imperative(sentence) or not sentence[:1].isupper() or _NOT_STATEMENT_RE.search(text)
                or _POINTER_ONLY_RE.search(text) or _FASTENER_RE.search(text)
                or not _STATEMENT_VERB_RE.search(_main_clause(sentence))
                or not _usable_text(view, unit)):
            continue
        answer = verbatim_span(text, view.markdown)
        if answer and len(answer.split()) >= 6 and not _pointer_caption(answer):
            yield Candidate(f"What does {_reference(view, unit)} specify?", answer, "factual", "text")


COVERAGE_SOURCES = (procedure_step_candidates, provision_statement_candidates, test_condition_candidates,
                    stated_value_candidates)
"""The fallback sources, in the order their questions are mixed."""
DEFAULT_COVERAGE_SOURCES = (procedure_step_candidates, provision_statement_candidates)
"""The fallback sources asked by default. qa-cov2 split the documents in two: A (UN R16, FMVSS 201, IIHS moderate
overlap, Euro NCAP CP 008-1) and B (UN R95, FMVSS 214/216/301, IIHS roof strength, Euro NCAP star rating). With the
checks developed on A, on B the procedure steps were 38/42 of the labelled pairs still asked plus 11/11 fresh pairs read
by hand (0.92), the set-up statements 55/58 plus 7/8 (0.94). ``generate.protocol.test_condition`` (1 of 6 labelled
pairs usable, one left asked) and ``generate.requirement.stated_value`` (8/10 on B, where it was measured; its two
failures were fixed on B itself, so no unseen half is left to show >= 0.85) are asked only with ``qa.coverage_rules``."""


def coverage_candidates(view: ChunkView, n: int, sources=COVERAGE_SOURCES) -> list[Candidate]:
    """Up to ``n`` pairs from the coverage rules ``sources`` (round robin over them), for a chunk no other rule asks
    of."""
    from tasks.qa import rules

    if n <= 0 or rules.skipped_chunk(view):
        return []
    groups = [[replace(c, rule=rules.source_rule(source)) for c in source(view) if rules._well_formed(c)]
              for source in sources]
    out: list[Candidate] = []
    seen: set[str] = set()
    for candidate in rules._round_robin(groups):
        if len(out) >= n:
            break
        if candidate.question not in seen and candidate.answer not in seen:
            seen.update({candidate.question, candidate.answer})
            out.append(candidate)
    return out


__all__ = ["COVERAGE_SOURCES", "DEFAULT_COVERAGE_SOURCES", "coverage_candidates", "imperative"]
