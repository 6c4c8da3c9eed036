"""lance-namespace's generated REST client, loaded name by name on first use instead of by ``import lancedb``.

``import lancedb`` imports ``lance_namespace``, which imports some hundred request and response models from
``lance_namespace_urllib3_client.models``. That first import runs the client package's ``__init__.py``, which
eagerly imports every generated API module (``api/*_api.py``, a few thousand lines of pydantic-validated methods
each), ``api_client``, ``configuration`` and urllib3: about 0.55 of the 1.5 CPU s of ``import lancedb``, for code
ragprep never runs (it only opens local tables; ``tasks/index/store.py``, ``tasks/index/run.py``).

:func:`defer_lance_client` (run by ``import ragprep``, so before any ragprep module imports lancedb) puts a finder
first on ``sys.meta_path`` for the client package and its ``api`` and ``models`` subpackages
(:data:`DEFERRED_PACKAGES`). Each of those ``__init__.py`` files only re-exports: a docstring, ``__version__ = ...``
and ``from <package>.<module> import Name`` lines. The loader reads that source (:func:`read_reexports`, so the map
never goes stale against the installed version), runs the docstring and constant assignments at once and binds
every re-exported name on first attribute access (a module ``__getattr__``, PEP 562): ``package.Name`` and ``from
package import Name`` give the very object the eager import gives, from the same module; a submodule (``package.rest``)
is imported when first used. ``dir(package)`` lists every name, and ``from package import *`` (which asks for
``__all__``, defined by none of them) binds every name first, as the eager import had. Any other ``__init__.py``
(another version of the client, an unreadable source) and any error while preparing the deferral run the package's
own ``__init__.py`` unchanged: the hook can only fall back to the eager import, never break lancedb. The models
``lance_namespace`` names are still imported by ``import lancedb`` (its class bodies use them); what no longer runs
there is the API modules, ``api_client`` and urllib3 (``tests/test_lance_client.py`` checks both, in fresh
interpreters). Where lancedb was imported before ``ragprep``, the finder is not installed.
"""

from __future__ import annotations

import ast
import importlib
import pkgutil
import sys
from dataclasses import dataclass
from importlib.abc import Loader, MetaPathFinder
from importlib.machinery import PathFinder
from pathlib import Path

CLIENT = "lance_namespace_urllib3_client"
DEFERRED_PACKAGES = (CLIENT, f"{CLIENT}.api", f"{CLIENT}.models")
"""The re-exporting packages whose ``__init__.py`` binds its names lazily (their ``api`` modules are the heavy part;
``models`` binds only the models that are used)."""


@dataclass(frozen=True)
class ReExports:
    """What a re-exporting ``__init__.py`` does: ``names`` maps each name it binds by import to ``(module, attribute)``;
    ``eager`` holds its other statements (a docstring, constant assignments), run when the package is imported."""

    names: dict[str, tuple[str, str]]
    eager: ast.Module


def _constant_statement(node: ast.stmt) -> set[str] | None:
    """The names a docstring or ``NAME = <constant>`` statement binds (none for a docstring); None for any other."""
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
        return set()
    if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) \
            and all(isinstance(t, ast.Name) for t in node.targets):
        return {t.id for t in node.targets}
    return None


def _own_import(node: ast.stmt, package: str, children: set[str]) -> list[tuple[str, str, str]] | None:
    """``(name, module, attribute)`` for each name a ``from <package>.<child>... import a [as name]`` binds, where
    ``<child>`` is a module of the package; None for any other statement (relative or star imports included)."""
    prefix = f"{package}."
    if not isinstance(node, ast.ImportFrom) or node.level or not (node.module or "").startswith(prefix):
        return None
    if node.module[len(prefix):].partition(".")[0] not in children or any(a.name == "*" for a in node.names):
        return None
    return [(a.asname or a.name, node.module, a.name) for a in node.names]


def read_reexports(package: str, source: str, children: set[str]) -> ReExports | None:
    """The re-exports of ``package``'s ``__init__.py`` ``source`` (``children``: the package's direct submodules), or
    None when the file does anything else, or binds a name twice, or binds a submodule's name: such a package is
    imported eagerly, as without the hook."""
    names: dict[str, tuple[str, str]] = {}
    eager: list[ast.stmt] = []
    for node in ast.parse(source).body:
        constants = _constant_statement(node)
        if constants is not None:
            if constants & (names.keys() | children):
                return None
            eager.append(node)
            continue
        imported = _own_import(node, package, children)
        if imported is None:
            return None
        for name, module, attribute in imported:
            if name in names or name in children:
                return None
            names[name] = (module, attribute)
    bound = {t.id for node in eager if isinstance(node, ast.Assign) for t in node.targets}
    if bound & names.keys():
        return None
    return ReExports(names, ast.Module(body=eager, type_ignores=[]))


def _import_from(module: str, attribute: str) -> object:
    """What ``from module import attribute`` binds (the attribute, else the submodule of that name)."""
    imported = importlib.import_module(module)
    try:
        return getattr(imported, attribute)
    except AttributeError:
        return importlib.import_module(f"{module}.{attribute}")


def _bind_lazily(module, reexports: ReExports, children: set[str]) -> None:
    """Give ``module`` a ``__getattr__`` that binds a re-exported name (or imports a submodule) on first access, and
    a ``__dir__`` that lists every name the eager import would bind."""
    namespace = module.__dict__
    package = module.__name__

    def __getattr__(name: str):
        if name == "__all__":  # `from package import *`: bind every name, then let it take the namespace's names
            for each in reexports.names:
                __getattr__(each)
            raise AttributeError(f"module {package!r} has no attribute '__all__'")
        if name in reexports.names:
            value = _import_from(*reexports.names[name])
        elif name in children:
            value = importlib.import_module(f"{package}.{name}")
        else:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(namespace.keys() | reexports.names.keys() | children)

    namespace["__getattr__"] = __getattr__
    namespace["__dir__"] = __dir__


def _children(module) -> set[str]:
    """The names of the package's direct submodules and subpackages."""
    return {info.name for info in pkgutil.iter_modules(module.__spec__.submodule_search_locations)}


class _DeferredReExports(Loader):
    """Wraps a package's own loader: runs its ``__init__.py``'s constant statements and binds its re-exports lazily,
    or runs the whole ``__init__.py`` (the package's own loader) where that file is not a plain re-export list."""

    def __init__(self, loader: Loader) -> None:
        self.loader = loader

    def __getattr__(self, name: str):
        if name == "loader":  # not set yet (a copy being made): no recursion
            raise AttributeError(name)
        return getattr(self.loader, name)  # get_source, get_resource_reader, is_package: the package's own loader's

    def create_module(self, spec):
        """The package's own loader's module (None: the default one)."""
        return self.loader.create_module(spec)

    def exec_module(self, module) -> None:
        """Bind the re-exports lazily; on any problem, execute the real ``__init__.py`` instead."""
        try:
            origin = module.__spec__.origin
            children = _children(module)
            reexports = read_reexports(module.__name__, Path(origin).read_text(encoding="utf-8"), children)
            if reexports is not None:
                exec(compile(reexports.eager, origin, "exec"), module.__dict__)
                _bind_lazily(module, reexports, children)
                return
        except Exception:  # the deferral is an optimisation: any failure means the eager import
            pass
        self.loader.exec_module(module)


class DeferLanceClient(MetaPathFinder):
    """Finds the ``packages`` (:data:`DEFERRED_PACKAGES`) where the path finder does and gives them a
    :class:`_DeferredReExports` loader; finds nothing (defers to the next finder) for every other import."""

    def __init__(self, packages: tuple[str, ...] = DEFERRED_PACKAGES) -> None:
        self.packages = frozenset(packages)

    def find_spec(self, fullname, path=None, target=None):
        """The path finder's spec of a deferred package with its loader wrapped; None for anything else."""
        if fullname not in self.packages:
            return None
        spec = PathFinder.find_spec(fullname, path, target)
        if spec is None or spec.loader is None or spec.submodule_search_locations is None or not spec.has_location:
            return None
        spec.loader = _DeferredReExports(spec.loader)
        return spec


def defer_lance_client() -> None:
    """Install the finder once per process (a no-op when it is installed, or when the client is imported already)."""
    if CLIENT in sys.modules or any(isinstance(f, DeferLanceClient) for f in sys.meta_path):
        return
    sys.meta_path.insert(0, DeferLanceClient())


def lance_client_deferred() -> bool:
    """Whether this process imported the client package with its re-exports bound lazily."""
    module = sys.modules.get(CLIENT)
    return module is not None and isinstance(getattr(module, "__loader__", None), _DeferredReExports) \
        and "__getattr__" in module.__dict__
