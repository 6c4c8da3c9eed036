"""Versioned, strict prompt templates.

One TOML file per prompt version under ``ragprep/prompts/<id>/v<version>.toml`` (package data) with ``id``,
``version``, ``description``, ``system`` and ``user`` (Jinja2). Rendering is strict:
a variable the template uses but the caller did not pass is an error, and so is a
variable passed but never used (a typo would otherwise silently drop an input).
Every generated row records ``id@version`` and the SHA-256 of the template file.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from functools import cached_property
from importlib.resources import files
from importlib.resources.abc import Traversable
from pathlib import Path

import jinja2
from jinja2 import meta

from ragprep.errors import RagprepError
from ragprep.ids import sha256_bytes

DEFAULT_PROMPTS_DIR: Traversable = files(__name__)
"""The prompt folders shipped with ragprep (package data of ``ragprep.prompts``, found through importlib.resources)."""
_ENV = jinja2.Environment(undefined=jinja2.StrictUndefined, autoescape=False, keep_trailing_newline=True)


class PromptError(RagprepError):
    """A template that cannot be found, parsed or rendered with the given variables."""


@dataclass(frozen=True)
class PromptTemplate:
    id: str
    version: int
    description: str
    system: str
    user: str
    sha256: str
    path: str

    @property
    def ref(self) -> str:
        """The prompt's ``id@version``."""
        return f"{self.id}@{self.version}"

    @cached_property
    def _compiled(self) -> tuple[jinja2.Template, jinja2.Template]:
        return _ENV.from_string(self.system), _ENV.from_string(self.user)

    @cached_property
    def variables(self) -> frozenset[str]:
        """The variables the system and user templates use."""
        names: set[str] = set()
        for source in (self.system, self.user):
            names |= meta.find_undeclared_variables(_ENV.parse(source))
        return frozenset(names)

    def render(self, variables: dict[str, object]) -> tuple[str, str]:
        """(system, user) with every variable substituted; missing or unused ones are errors."""
        missing = sorted(self.variables - variables.keys())
        unused = sorted(variables.keys() - self.variables)
        if missing:
            raise PromptError(f"prompt {self.ref} ({self.path}): missing variable(s) {', '.join(missing)}")
        if unused:
            raise PromptError(f"prompt {self.ref} ({self.path}): unknown variable(s) {', '.join(unused)}")
        try:
            system, user = self._compiled
            return system.render(variables), user.render(variables)
        except jinja2.TemplateError as exc:
            raise PromptError(f"prompt {self.ref} ({self.path}): {exc}") from exc


def load_prompt(
    prompt_id: str, version: int | None = None, prompts_dir: Path | Traversable = DEFAULT_PROMPTS_DIR
) -> PromptTemplate:
    """The given version of a prompt, or its highest version."""
    folder = prompts_dir / prompt_id
    names = [p.name for p in folder.iterdir()] if folder.is_dir() else []
    versions = sorted(int(n[1:-5]) for n in names if n.startswith("v") and n.endswith(".toml") and n[1:-5].isdigit())
    if not versions:
        raise PromptError(f"no prompt templates for {prompt_id!r} under {folder}")
    chosen = versions[-1] if version is None else version
    path = folder / f"v{chosen}.toml"
    if not path.is_file():
        raise PromptError(f"prompt {prompt_id}@{chosen} not found; available versions: {versions}")
    raw = path.read_bytes()
    try:
        data = tomllib.loads(raw.decode("utf-8"))
        template = PromptTemplate(
            id=data["id"],
            version=int(data["version"]),
            description=data.get("description", ""),
            system=data["system"],
            user=data["user"],
            sha256=sha256_bytes(raw),
            path=str(path),
        )
    except (tomllib.TOMLDecodeError, KeyError, ValueError) as exc:
        raise PromptError(f"{path}: invalid prompt file ({exc})") from exc
    if template.id != prompt_id or template.version != chosen:
        raise PromptError(f"{path}: declares {template.ref}, expected {prompt_id}@{chosen}")
    try:
        template.variables  # parse now: a syntax error is reported at load time
    except jinja2.TemplateSyntaxError as exc:
        raise PromptError(f"{path}: template syntax error: {exc}") from exc
    return template
