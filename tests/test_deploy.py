"""deploy/prefect.yaml names flows that exist, with parameters they accept."""

from __future__ import annotations

import importlib
import inspect
import os
from pathlib import Path

import pytest
import yaml
from prefect import Flow

from tests.conftest import REPO


def test_every_deployment_entrypoint_is_a_flow_accepting_its_parameters():
    spec = yaml.safe_load((REPO / "deploy" / "prefect.yaml").read_text())
    assert spec["deployments"]
    for deployment in spec["deployments"]:
        path, name = deployment["entrypoint"].split(":")
        module = importlib.import_module(path.removesuffix(".py").replace("/", "."))
        flow = getattr(module, name)
        assert isinstance(flow, Flow), deployment["name"]
        accepted = set(inspect.signature(flow.fn).parameters)
        assert set(deployment.get("parameters", {})) <= accepted, deployment["name"]
        assert flow.fn.__doc__ and "Args:" in flow.fn.__doc__, f"{name} documents its parameters for the UI"


def _spec() -> dict:
    return yaml.safe_load((REPO / "deploy" / "prefect.yaml").read_text())


def test_every_deployment_names_its_root_and_the_pull_step_names_ragprep_home():
    spec = _spec()
    for deployment in spec["deployments"]:
        assert deployment["parameters"]["root"] == "{{ $RAGPREP_ROOT }}", deployment["name"]
    assert spec["pull"] == [{"flows.runtime.use_checkout": {"directory": "{{ $RAGPREP_HOME }}"}}]


def test_a_missing_ragprep_home_fails_the_pull_step_naming_the_variable(monkeypatch, tmp_path):
    """The pull step as Prefect runs it on the worker: inputs templated from the environment, then the step called."""
    from prefect.utilities.importtools import import_object
    from prefect.utilities.templating import apply_values

    from flows.runtime import MissingHomeError

    [(fqn, inputs)] = _spec()["pull"][0].items()
    step = import_object(fqn)
    monkeypatch.delenv("RAGPREP_HOME", raising=False)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(MissingHomeError, match="^RAGPREP_HOME is not set on the worker: set it to the ragprep code checkout"):
        step(**apply_values(inputs, os.environ))
    monkeypatch.setenv("RAGPREP_HOME", str(REPO))
    assert step(**apply_values(inputs, os.environ)) == {"directory": str(REPO)}
    assert Path.cwd() == REPO


def test_a_deployment_run_refuses_a_root_inside_the_checkout(monkeypatch, tmp_path):
    from flows.dataset import dataset_flow
    from flows.runtime import CheckoutRootError, deployment_settings

    monkeypatch.delenv("RAGPREP_ROOT", raising=False)
    assert deployment_settings(str(REPO / "ragprep-data")).root == REPO / "ragprep-data"  # a CLI run (make demo) may
    monkeypatch.setenv("PREFECT__RUNTIME__DEPLOYMENT__ID", "00000000-0000-0000-0000-000000000001")
    monkeypatch.chdir(REPO)
    for root in (str(REPO / "ragprep-data"), ""):  # "": a deployment made while RAGPREP_ROOT was unset
        with pytest.raises(CheckoutRootError) as raised:
            dataset_flow.fn(root=root)
        message = str(raised.value)
        assert "\n" not in message and f"root {REPO / 'ragprep-data'} is inside the code checkout {REPO}" in message
        assert "RAGPREP_ROOT" in message
    assert deployment_settings(str(tmp_path / "data")).root == tmp_path / "data"


def test_workers_limits_are_in_the_parameter_schema():
    from flows.ingest import ingest_flow
    from flows.pipeline import pipeline_flow
    from ragprep.settings import MAX_WORKERS

    for fl in (ingest_flow, pipeline_flow):
        schema = fl.parameters.model_dump()["properties"]["workers"]
        bounds = [(option.get("minimum"), option.get("maximum")) for option in schema["anyOf"] if option.get("type") == "integer"]
        assert bounds == [(1, MAX_WORKERS)], fl.name
        with pytest.raises(Exception, match="less than or equal to 16"):
            fl.validate_parameters({"paths": ["x"], "workers": 50})


def test_io_and_llm_tasks_retry_transient_errors_only():
    from prefect.states import Failed

    from ragprep.errors import RagprepError
    from tasks import wrappers

    for t in (wrappers.discover_task, wrappers.ingest_document_task, wrappers.qa_task, wrappers.negatives_task):
        assert t.retries == 2 and t.retry_condition_fn is wrappers._retryable, t.name
    assert wrappers.discover_task.timeout_seconds == wrappers.DISCOVER_TIMEOUT_S
    assert wrappers.build_version_task.retries == 0  # publishing is not retried blindly
    assert wrappers._retryable(None, None, Failed(data=OSError("share went away"))) is True
    assert wrappers._retryable(None, None, Failed(data=RagprepError("fix the setting"))) is False
    assert wrappers._retryable(None, None, Failed(data=TimeoutError())) is False


def test_a_redeploy_keeps_the_parameters_an_operator_set_and_takes_the_code_for_the_rest():
    from flows.deployments import merged_parameters

    recorded = {"root": "/r", "paths": ["/data/corpus"], "workers": 2}  # the code's parameters at the last deploy
    deployed = {"root": "/r", "paths": ["/mnt/share"], "workers": 2, "ocr": False}  # paths and ocr set in the UI
    code = {"root": "/r", "paths": ["/data/corpus"], "workers": 4}  # the code now raises workers
    assert merged_parameters(code, deployed, recorded) == {"root": "/r", "paths": ["/mnt/share"], "workers": 4, "ocr": False}
    assert merged_parameters(code, None, None) == code  # a new deployment: the code's
    # deployed before serve kept records: every value that differs from the code counts as the operator's
    assert merged_parameters(code, deployed, None) == {"root": "/r", "paths": ["/mnt/share"], "workers": 2, "ocr": False}


def test_the_code_version_changes_with_the_entry_or_the_flow_source_only(tmp_path):
    from flows.deployments import code_version, load_spec, select

    [entry] = select(load_spec(REPO / "deploy" / "prefect.yaml"), ["nightly-test-reports"])
    same = code_version(entry, tmp_path)
    assert same == code_version(dict(entry), tmp_path) and same.startswith("code-")
    assert code_version({**entry, "parameters": {**entry["parameters"], "workers": 3}}, tmp_path) != same
    assert code_version(entry, tmp_path / "other-root") != same  # the root is part of what is deployed
    with pytest.raises(Exception, match="has no deployment nope; known: ingest-on-demand"):
        select(load_spec(REPO / "deploy" / "prefect.yaml"), ["nope"])


def test_build_deployments_share_the_queue_with_limit_one_and_every_deployment_is_tagged():
    builds = {"ingest-on-demand", "full-build", "quotes-and-negatives", "nightly-test-reports"}
    for deployment in _spec()["deployments"]:
        assert "ragprep" in deployment["tags"], deployment["name"]  # the failure automation matches this tag
        queue = deployment["work_pool"].get("work_queue_name")
        assert (queue == "builds") == (deployment["name"] in builds), deployment["name"]
