"""deploy/prefect.yaml names flows that exist, with parameters they accept."""

from __future__ import annotations

import importlib
import inspect

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
