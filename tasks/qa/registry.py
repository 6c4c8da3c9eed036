"""One registry of the QA stage's rules: every generator rule, critic rule and flag is a named object.

A ``Rule`` says what it is called (``kind.family.name``), what it fires on, the criterion it checks and the
rubric criterion it caps (``grounded``, ``standalone``, ``well_formed``, ``useful``; or ``flag`` for a pair flag,
``generate`` for a generator source). Flags, the critic, the review report and the audit all look rules up
here by name, and tests refer to rules by name (``RULES["critic.handle.placeholder"]``), so a rule's reason,
count and documentation come from one place.

Register with ``@rule(...)`` on the function that implements it, or with ``register(Rule(...))`` for a rule
whose code lives elsewhere (the flag codes of ``schemas.qa_pairs``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

KINDS = ("generate", "critic", "flag")


@dataclass(frozen=True)
class Rule:
    """A named rule: what it fires on and the criterion it checks."""

    name: str
    kind: str
    fires_on: str
    """What the rule looks at, in words ("the quoted document name of the question")."""
    criterion: str
    """What makes it fire, in words (the check itself)."""
    caps: str = ""
    """The rubric criterion it caps (critic rules), ``flag`` for a flag, the question type for a generator rule."""
    check: Callable | None = None


RULES: dict[str, Rule] = {}


def register(item: Rule) -> Rule:
    """Add ``item`` to the registry; a second rule of the same name is a programming error."""
    if item.kind not in KINDS:
        raise ValueError(f"rule {item.name!r}: kind must be one of {KINDS}, not {item.kind!r}")
    known = RULES.get(item.name)
    if known is not None and known.check is not item.check:
        raise ValueError(f"two rules are named {item.name!r}")
    RULES[item.name] = item
    return item


def rule(name: str, kind: str, fires_on: str, criterion: str, caps: str = "") -> Callable[[Callable], Callable]:
    """Decorator: register the decorated function as the rule ``name`` and return it unchanged."""

    def wrap(func: Callable) -> Callable:
        register(Rule(name, kind, fires_on, criterion, caps, func))
        return func

    return wrap


RULE_MODULES = ("tasks.qa.handles", "tasks.qa.rules.requirements", "tasks.qa.rules.provisions", "tasks.qa.budget",
                "tasks.qa.rules.subjects", "tasks.qa.rules.tables", "tasks.qa.rules.results", "tasks.qa.rules.pointers",
                "tasks.qa.rules.cells", "tasks.qa.rules.facts", "tasks.qa.rules.criteria",
                "tasks.qa.rules.sections", "tasks.qa.rules.opinions", "tasks.qa.critic_structure",
                "tasks.qa.rules.coverage", "tasks.qa.rules.protocols")
"""The modules whose functions register rules when imported."""


def load_all() -> dict[str, Rule]:
    """Import every rule module, so that the registry holds every rule; returns the registry."""
    import importlib

    for module in RULE_MODULES:
        importlib.import_module(module)
    return RULES


def rules_of(kind: str) -> list[Rule]:
    """The registered rules of one kind, by name (every rule module loaded)."""
    load_all()
    return sorted((r for r in RULES.values() if r.kind == kind), key=lambda r: r.name)


def describe(name: str) -> str:
    """One line for a rule or flag name: what it fires on and its criterion ('' when unknown)."""
    load_all()
    found = RULES.get(name) or RULES.get(f"flag.{name}")
    return f"{found.fires_on}: {found.criterion}" if found else ""


FLAG_DESCRIPTIONS = {
    "unsupported_answer": ("the answer", "too few of its words occur in the chunk (qa.support_threshold)"),
    "number_not_in_chunk": ("the answer's numbers", "a number of the answer is not in the chunk"),
    "unsupported_segment": (
        "the answer's sentences", "a sentence shares too little with the chunk (qa.segment_threshold); quoted in the reason"
    ),
    "near_duplicate": ("the question and every earlier one", "token-set similarity over qa.duplicate_threshold"),
    "not_a_question": ("the question", "it does not end as a question"),
    "answer_leak": ("question and answer", "the question contains its own answer"),
    "too_short": ("question and answer", "under qa.min_question_chars, or an empty answer"),
    "too_long": ("question and answer", "over qa.max_question_chars / qa.max_answer_chars"),
    "language_mismatch": ("question and chunk", "the question's language is not the chunk's"),
    "generic_question": ("the question", "'this slide/document' without naming what it asks about"),
    "suspicious_content": ("question and answer", "markup or an instruction to a model"),
    "generation_failed": ("a chunk", "the generator's reply was unusable"),
    "ambiguous_gold": ("question and answer", "the same pair was generated from another chunk"),
    "low_quality:grounded": ("the critic", "grounded scored below qa.critic_min_score"),
    "low_quality:standalone": ("the critic", "standalone scored below qa.critic_min_score"),
    "low_quality:well_formed": ("the critic", "well_formed scored below qa.critic_min_score"),
    "low_quality:useful": ("the critic", "useful scored below qa.critic_min_score"),
    "low_quality:judge_failed": ("the critic", "no usable reply from the judge"),
}
"""Every flag code (``schemas.qa_pairs.FLAG_CODES`` and ``tasks.qa.segments.CODE``): what it fires on and when."""

for _code, (_on, _when) in FLAG_DESCRIPTIONS.items():
    register(Rule(f"flag.{_code}", "flag", _on, _when, "flag"))
