"""lance-namespace's generated REST client is bound name by name on first use (``ragprep/engines/lance_client.py``):
every name of its packages is the object the eager import gives, the client still works when used, a ``ragprep
search`` process never runs its API modules, and anything unexpected falls back to the eager import. The checks on
the real client run in fresh interpreters (``sys.modules`` of a subprocess); nothing here is timed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ragprep.engines import lance_client
from ragprep.engines.lance_client import CLIENT, DeferLanceClient, read_reexports
from tests.conftest import SAMPLE_DOCS

REPO = Path(__file__).resolve().parents[1]


def _python(code: str, *args: str) -> dict:
    env = dict(os.environ, PYTHONPATH=str(REPO), LANCE_LOG="error")
    done = subprocess.run([sys.executable, "-c", code, *args], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


NAMES_OF_THE_CLIENT = """
import json, sys, types
if sys.argv[1] == "ragprep-first":
    import ragprep
import lancedb
import lancedb.namespace, lancedb.remote.db  # lancedb's namespace and remote modules import
from ragprep.engines.lance_client import DEFERRED_PACKAGES, lance_client_deferred

api_at_import = sorted(m for m in sys.modules if m.startswith("lance_namespace_urllib3_client.api"))
star = {}
for package in DEFERRED_PACKAGES:
    namespace = {}
    exec(f"from {package} import *", namespace)
    star[package] = sorted(n for n in namespace if n != "__builtins__")

def identity(value):
    if isinstance(value, types.ModuleType):
        return "module " + value.__name__
    if isinstance(value, (str, int, float, bool, list, type(None))):
        return "value " + repr(value)
    assert getattr(sys.modules[value.__module__], value.__qualname__) is value  # the object its module defines
    return f"{value.__module__}.{value.__qualname__}"

names = {}
for package in DEFERRED_PACKAGES:
    module = sys.modules[package]
    listed = [n for n in dir(module) if not n.startswith("__")] + ["__doc__", "__path__", "__file__"]
    listed += ["__version__"] if package == "lance_namespace_urllib3_client" else []
    names[package] = {n: identity(getattr(module, n)) for n in listed}

from lance_namespace_urllib3_client import ApiClient, Configuration, TableApi
from lance_namespace_urllib3_client.models import DescribeTableRequest
client = ApiClient(Configuration(host="http://127.0.0.1:9"))  # nothing is sent
request = client.sanitize_for_serialization(DescribeTableRequest(id=["ns", "t"], version=3))
method, url, headers, body, _ = TableApi(client)._list_tables_serialize(
    "ns", None, None, 5, None, None, None, None, 0)
response = client.deserialize('{"version": 3, "location": "/x", "schema": {"fields": []}}', "DescribeTableResponse",
                              "application/json")
used = [request, method, url, headers.get("Accept"), type(response).__name__, response.version,
        type(response.var_schema).__module__]
print(json.dumps({"deferred": lance_client_deferred(), "api_at_import": api_at_import, "star": star, "names": names,
                  "used": used}))
"""


def test_every_name_of_the_client_packages_is_the_object_the_eager_import_gives_and_the_client_still_works():
    lazy = _python(NAMES_OF_THE_CLIENT, "ragprep-first")
    eager = _python(NAMES_OF_THE_CLIENT, "lancedb-first")
    assert not eager["deferred"] and eager["api_at_import"]  # lancedb alone imports every API module
    assert lazy["deferred"] and lazy["api_at_import"] == []
    for package, names in eager["names"].items():
        assert len(names) > 5 and lazy["names"][package] == names, package
    assert len(eager["names"][CLIENT]) > 150 and eager["names"][CLIENT]["TableApi"].endswith(".table_api.TableApi")
    assert lazy["star"] == eager["star"]
    assert lazy["used"] == eager["used"] and lazy["used"][1] == "GET" and "ns" in lazy["used"][2]


MODULES_OF_SEARCH = """
import json, sys
from ragprep.cli import app
try:
    app(sys.argv[1:])
except SystemExit as exc:
    assert not exc.code, exc.code
from ragprep.engines.lance_client import lance_client_deferred
print("MODULES", json.dumps({"deferred": lance_client_deferred(), "lancedb": "lancedb" in sys.modules, "urllib3": "urllib3" in sys.modules,
                  "client": sorted(m for m in sys.modules if m.startswith("lance_namespace_urllib3_client")
                                   and not m.startswith("lance_namespace_urllib3_client.models."))}))
"""


@pytest.fixture(scope="module")
def indexed_root(ingest_copy, shared_embeddings, tmp_path_factory) -> Path:
    """One sample deck ingested, published and indexed (its vectors from the session's shared cache where there)."""
    from tasks.dataset.versions import build_version
    from tasks.index.run import run_index

    settings = ingest_copy([SAMPLE_DOCS / "crash_report_side_pole.pptx"], tmp_path_factory.mktemp("lance-client") / "root")
    settings = settings.model_copy(update={"embeddings_cache": shared_embeddings})
    assert build_version(settings).published
    run_index(settings)
    return settings.root


def test_a_search_process_never_runs_the_generated_api_modules(indexed_root):
    done = subprocess.run(
        [sys.executable, "-c", MODULES_OF_SEARCH, "search", "pulse", "--json", "--k", "3", "--root", str(indexed_root)],
        cwd=REPO, env=dict(os.environ, PYTHONPATH=str(REPO), RAGPREP_OCR__ENABLED="false"), capture_output=True,
        text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    output, _, modules = done.stdout.rpartition("MODULES ")
    hits, loaded = json.loads(output)["hits"], json.loads(modules)
    assert hits and hits[0]["document"] == "crash_report_side_pole.pptx"  # a hybrid search over the LanceDB table ran
    assert loaded["lancedb"] and loaded["deferred"]
    assert loaded["client"] == [CLIENT, f"{CLIENT}.models"], loaded["client"]  # no api, api_client, rest, configuration
    assert not loaded["urllib3"]


# -- the mechanism, on a package of the test's own (in this process) ------------------------------------------------

PLAIN = '''"""A re-exporting package."""
__version__ = "1.0"
from fakeclient.heavy import Thing
from fakeclient.sub.inner import Inner as Alias
'''


def _package(tmp_path: Path, init: str, name: str = "fakeclient") -> Path:
    package = tmp_path / name
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text(init)
    (package / "heavy.py").write_text("import sys\nsys.fakeclient_runs.append('heavy')\nclass Thing:\n    pass\n")
    (package / "light.py").write_text("VALUE = 1\n")
    (package / "sub" / "__init__.py").write_text("")
    (package / "sub" / "inner.py").write_text("class Inner:\n    pass\n")
    return tmp_path


@pytest.fixture
def fake_import(tmp_path, monkeypatch):
    """import_fake(init) -> the package ``fakeclient`` imported through the finder, its ``__init__.py`` being ``init``."""
    monkeypatch.setattr(sys, "fakeclient_runs", [], raising=False)
    monkeypatch.syspath_prepend(str(tmp_path))
    finder = DeferLanceClient(("fakeclient",))
    sys.meta_path.insert(0, finder)

    def import_fake(init: str):
        _package(tmp_path, init)
        import importlib

        return importlib.import_module("fakeclient")

    yield import_fake
    sys.meta_path.remove(finder)
    for name in [m for m in sys.modules if m == "fakeclient" or m.startswith("fakeclient.")]:
        del sys.modules[name]


def test_a_re_exporting_package_binds_each_name_on_first_use_to_the_object_of_its_module(fake_import):
    package = fake_import(PLAIN)
    assert sys.fakeclient_runs == [] and "fakeclient.heavy" not in sys.modules
    assert package.__version__ == "1.0" and package.__doc__ == "A re-exporting package."
    assert {"Thing", "Alias", "heavy", "light", "sub"} <= set(dir(package))
    assert package.Thing is sys.modules["fakeclient.heavy"].Thing and sys.fakeclient_runs == ["heavy"]
    assert package.Thing is package.Thing and sys.fakeclient_runs == ["heavy"]  # bound once
    from fakeclient import Alias
    from fakeclient.sub.inner import Inner

    assert Alias is Inner
    assert package.light.VALUE == 1  # a submodule imported on first use, as the eager import had it
    with pytest.raises(AttributeError, match="has no attribute 'Missing'"):
        package.Missing
    with pytest.raises(ImportError, match="Missing"):
        from fakeclient import Missing  # noqa: F401


def test_star_import_of_a_deferred_package_binds_every_name(fake_import):
    fake_import(PLAIN)
    namespace: dict = {}
    exec("from fakeclient import *", namespace)
    assert namespace["Thing"] is sys.modules["fakeclient.heavy"].Thing and namespace["Alias"].__name__ == "Inner"


@pytest.mark.parametrize("init", [
    PLAIN + "print('side effect')\n",
    PLAIN + "from .light import VALUE\n",  # relative
    PLAIN + "from fakeclient.light import *\n",
    PLAIN + "from os.path import join\n",  # not the package's own module
    PLAIN + "from fakeclient.light import VALUE as Thing\n",  # a name bound twice
    PLAIN + "Thing = 3\n",
    PLAIN + "from fakeclient.sub.inner import Inner as light\n",  # a submodule's name
    PLAIN + "def f():\n    pass\n",
    "from fakeclient.heavy import (\n",
], ids=["call", "relative", "star", "foreign", "twice", "assigned", "submodule-name", "def", "syntax"])
def test_anything_but_a_plain_re_export_list_is_imported_eagerly(fake_import, init):
    if init.endswith("(\n"):
        with pytest.raises(SyntaxError):  # the package's own error, from its own loader
            fake_import(init)
        return
    package = fake_import(init)
    assert sys.fakeclient_runs == ["heavy"] and "__getattr__" not in vars(package)  # the eager import ran


def test_a_failure_of_the_deferral_falls_back_to_the_eager_import(fake_import, monkeypatch):
    def broken(*args):
        raise RuntimeError("broken")

    monkeypatch.setattr(lance_client, "read_reexports", broken)
    package = fake_import(PLAIN)
    assert sys.fakeclient_runs == ["heavy"] and package.Thing is sys.modules["fakeclient.heavy"].Thing


def test_read_reexports_maps_the_names_of_the_real_client_packages():
    from importlib.util import find_spec

    spec = find_spec(f"{CLIENT}.models")  # finding imports the parent package (deferred here: cheap)
    children = {p.stem for p in Path(spec.origin).parent.glob("*.py")} - {"__init__"}
    reexports = read_reexports(spec.name, Path(spec.origin).read_text(encoding="utf-8"), children)
    assert reexports is not None and len(reexports.names) == len(children)  # one model class per module
    assert reexports.names["JsonArrowSchema"] == (f"{CLIENT}.models.json_arrow_schema", "JsonArrowSchema")
    assert read_reexports("fakeclient", PLAIN, {"heavy", "sub"}).names == {
        "Thing": ("fakeclient.heavy", "Thing"), "Alias": ("fakeclient.sub.inner", "Inner")}
