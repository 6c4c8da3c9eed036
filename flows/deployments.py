"""What ``ragprep serve`` keeps on its Prefect server: the work pool and its queues, the deployments of
``deploy/prefect.yaml``, and the failure notification.

- **Deployments, without undoing the operator's edits.** ``prefect deploy`` overwrites a deployment's parameters
  and schedules with those of ``prefect.yaml``, whatever was edited in the UI (Prefect 3 has no flag to keep them:
  PrefectHQ/prefect#18019). So serve deploys only what changed in code: each deployment carries the hash of its
  ``prefect.yaml`` entry and of its flow's source file as its ``version``; an unchanged one is not redeployed
  (parameters, schedules and descriptions edited in the UI stay as they are). A changed one is redeployed with
  the parameters the operator set kept: the code's parameters of the last deploy are remembered in the Prefect
  variable ``ragprep_deployed``, and a parameter whose value on the server differs from them was set by an operator.
- **One build per root at a time, queued.** The deployments that write the working tables go to the work queue
  ``builds`` (concurrency limit 1): an overlapping run waits, Scheduled, until the running one ends, instead of
  failing on the root's build lock.
- **Failure notification.** With ``serve.notify_url`` set, a webhook block ``ragprep-failure-webhook`` and an
  automation ``ragprep-failure-notification``: every flow run tagged ``ragprep`` (every deployment of
  ``prefect.yaml``) that ends Failed or Crashed sends one POST to it. Unset, the automation is removed.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import tempfile
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import yaml

from flows import CHECKOUT
from ragprep.errors import RagprepError

POOL = "ragprep"
BUILD_QUEUE = "builds"
"""The work queue of the deployments that write the working tables (limit 1: they queue instead of failing)."""
DEPLOYED_VARIABLE = "ragprep_deployed"
WEBHOOK_BLOCK = "ragprep-failure-webhook"
AUTOMATION = "ragprep-failure-notification"
FAILURE_EVENTS = frozenset({"prefect.flow-run.Failed", "prefect.flow-run.Crashed"})
ROOT_TEMPLATE = "{{ $RAGPREP_ROOT }}"

Say = Callable[[str], None]


class DeployError(RagprepError):
    """``prefect deploy`` failed, or ``deploy/prefect.yaml`` does not name a deployment serve was asked for."""


def load_spec(deploy_file: Path) -> dict[str, Any]:
    """``deploy/prefect.yaml`` as a dict."""
    return yaml.safe_load(deploy_file.read_text(encoding="utf-8"))


def select(spec: dict[str, Any], names: list[str] | None) -> list[dict[str, Any]]:
    """The deployment entries named (all when ``names`` is empty); an unknown name is an error naming the known ones."""
    entries = spec.get("deployments") or []
    if not names:
        return list(entries)
    known = {entry["name"]: entry for entry in entries}
    missing = [name for name in names if name not in known]
    if missing:
        raise DeployError(f"deploy/prefect.yaml has no deployment {', '.join(missing)}; known: {', '.join(known)}")
    return [known[name] for name in names]


def resolved_parameters(entry: dict[str, Any], root: Path) -> dict[str, Any]:
    """The entry's parameters with ``{{ $RAGPREP_ROOT }}`` replaced by the root (what ``prefect deploy`` would store)."""
    return {key: (str(root) if value == ROOT_TEMPLATE else value) for key, value in (entry.get("parameters") or {}).items()}


def code_version(entry: dict[str, Any], root: Path, checkout: Path = CHECKOUT) -> str:
    """``code-<12 hex>``: the hash of the entry (root resolved) and of its flow's source file."""
    source = checkout / entry["entrypoint"].split(":", 1)[0]
    digest = hashlib.sha256(json.dumps({**entry, "parameters": resolved_parameters(entry, root)}, sort_keys=True,
                                       default=str).encode())
    digest.update(source.read_bytes() if source.is_file() else b"")
    return "code-" + digest.hexdigest()[:12]


def merged_parameters(code: dict[str, Any], deployed: dict[str, Any] | None, recorded: dict[str, Any] | None) -> dict[str, Any]:
    """The parameters of a redeploy: the code's, except those an operator set (their server value differs from the
    code's value of the last deploy, ``recorded``; without a record every differing server value counts as set)."""
    if deployed is None:
        return dict(code)
    before = recorded if recorded is not None else code
    merged = dict(code)
    for key, value in deployed.items():
        if key not in before or value != before[key]:
            merged[key] = value
    return merged


def _work_pool(client) -> None:
    """The ``ragprep`` process pool (kept as it is when it exists) and its ``builds`` queue with a limit of 1."""
    from prefect.client.schemas.actions import WorkPoolCreate
    from prefect.exceptions import ObjectNotFound
    from prefect.workers.process import ProcessWorker

    try:
        client.read_work_pool(POOL)
    except ObjectNotFound:
        client.create_work_pool(WorkPoolCreate(name=POOL, type="process",
                                               base_job_template=ProcessWorker.get_default_base_job_template()))
    try:
        queue = client.read_work_queue_by_name(BUILD_QUEUE, work_pool_name=POOL)
    except ObjectNotFound:
        client.create_work_queue(BUILD_QUEUE, work_pool_name=POOL, concurrency_limit=1,
                                 description="Runs that write the working tables of the root: one at a time, the rest wait.")
        return
    if queue.concurrency_limit != 1:
        client.update_work_queue(queue.id, concurrency_limit=1)


def _read_deployed(client, flow_names: dict[str, str]) -> dict[str, Any]:
    """name -> the server's deployment (None when missing)."""
    from prefect.exceptions import ObjectNotFound

    found: dict[str, Any] = {}
    for name, flow_name in flow_names.items():
        try:
            found[name] = client.read_deployment_by_name(f"{flow_name}/{name}")
        except ObjectNotFound:
            found[name] = None
    return found


def _flow_name(entry: dict[str, Any], checkout: Path) -> str:
    """The flow name of an entry (read from the decorator's ``name=`` or the documents_flow call, without importing)."""
    path, function = entry["entrypoint"].split(":", 1)
    lines = (checkout / path).read_text(encoding="utf-8").splitlines()
    for index, line in enumerate(lines):
        if line.startswith((f"def {function}(", f"async def {function}(")):
            for above in reversed(lines[max(0, index - 4):index]):
                for marker in ('name="', 'documents_flow("'):
                    if marker in above:
                        return above.split(marker, 1)[1].split('"', 1)[0]
            return function.replace("_", "-")
    raise DeployError(f"{entry['entrypoint']}: no function {function} in {path}")


class DeploymentSync:
    """Brings the server's deployments in line with ``deploy/prefect.yaml`` without undoing the operator's edits."""

    def __init__(self, deploy_file: Path, root: Path, env: dict[str, str], prefect: str, checkout: Path = CHECKOUT) -> None:
        self.deploy_file = deploy_file
        self.root = root
        self.env = env
        self.prefect = prefect
        self.checkout = checkout
        self.selected: list[dict[str, Any]] = []

    def apply(self, client, names: list[str] | None, say: Say) -> list[str]:
        """Deploy what changed (keeping operator-set parameters); returns the names (re)deployed."""
        from prefect.variables import Variable

        _work_pool(client)
        spec = load_spec(self.deploy_file)
        entries = self.selected = select(spec, names)
        flows = {entry["name"]: _flow_name(entry, self.checkout) for entry in entries}
        deployed = _read_deployed(client, flows)
        record = Variable.get(DEPLOYED_VARIABLE, default=None) or {}
        if isinstance(record, str):
            record = json.loads(record)
        changed: list[dict[str, Any]] = []
        for entry in entries:
            name, version = entry["name"], code_version(entry, self.root, self.checkout)
            current = deployed[name]
            if current is not None and current.version == version:
                say(f"deployment {name}: unchanged code, kept as it is (edits made in the UI stay)")
                continue
            code = resolved_parameters(entry, self.root)
            recorded = (record.get(name) or {}).get("parameters")
            parameters = merged_parameters(code, current.parameters if current is not None else None, recorded)
            kept = sorted(k for k in parameters if k not in code or parameters[k] != code[k])
            say(f"deployment {name}: {'code changed, redeploying' if current is not None else 'new, deploying'}"
                + (f" (keeping the parameters set in the UI: {', '.join(kept)})" if kept else ""))
            changed.append({**entry, "parameters": parameters, "version": version})
            record[name] = {"version": version, "parameters": code}
        if changed:
            self._deploy({**spec, "deployments": changed})
            Variable.set(DEPLOYED_VARIABLE, record, overwrite=True)
        return [entry["name"] for entry in changed]

    def _deploy(self, spec: dict[str, Any]) -> None:
        """One ``prefect deploy`` of the given spec (written to a temporary prefect.yaml)."""
        with tempfile.TemporaryDirectory(prefix="ragprep-deploy-") as folder:
            path = Path(folder) / "prefect.yaml"
            path.write_text(yaml.safe_dump(spec, sort_keys=False, allow_unicode=True), encoding="utf-8")
            names = [arg for entry in spec["deployments"] for arg in ("--name", entry["name"])]
            proc = subprocess.run([self.prefect, "--no-prompt", "deploy", "--prefect-file", str(path), *names],  # noqa: S603
                                  cwd=self.checkout, env=self.env, capture_output=True, text=True, timeout=300, check=False)
        if proc.returncode:
            last = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
            raise DeployError(f"`prefect deploy` failed (exit {proc.returncode}): {last[0]}")


def schedules(client, entries: list[dict[str, Any]], checkout: Path = CHECKOUT) -> list[str]:
    """One line per schedule of the given deployments, as the server holds it: its cron and its time zone."""
    lines = []
    for entry in entries:
        name = entry["name"]
        deployment = _read_deployed(client, {name: _flow_name(entry, checkout)})[name]
        for item in getattr(deployment, "schedules", None) or []:
            schedule = item.schedule
            cron, zone = getattr(schedule, "cron", None), getattr(schedule, "timezone", None) or "UTC"
            if cron:
                state = "active" if item.active else "paused"
                lines.append(f"schedule {name}: `{cron}` in {zone} ({state})")
    return lines


def failure_notification(client, notify_url: str | None, say: Say) -> None:
    """Keep (or remove, when ``notify_url`` is unset) the webhook block and the automation that notifies failures."""
    from prefect.automations import Automation
    from prefect.blocks.notifications import CustomWebhookNotificationBlock
    from prefect.events.actions import SendNotification
    from prefect.events.schemas.automations import EventTrigger, Posture

    for existing in client.read_automations_by_name(AUTOMATION):
        client.delete_automation(existing.id)
    if not notify_url:
        say("failure notification: off (set [serve] notify_url in ragprep.toml or RAGPREP_SERVE__NOTIFY_URL)")
        return
    block = CustomWebhookNotificationBlock(name="ragprep", url=notify_url, method="POST",
                                           json_data={"subject": "{{subject}}", "body": "{{body}}"})
    block_id = block.save(WEBHOOK_BLOCK, overwrite=True)
    trigger = EventTrigger(expect=set(FAILURE_EVENTS), match_related={"prefect.resource.id": "prefect.tag.ragprep"},
                           posture=Posture.Reactive, threshold=1, within=timedelta(0))
    action = SendNotification(
        block_document_id=block_id,
        subject="ragprep: {{ flow_run.name }} ended {{ flow_run.state.name }}",
        body="Flow run {{ flow_run.name }} ({{ flow.name }}) ended {{ flow_run.state.name }}: {{ flow_run.state.message }}\n"
             "{{ flow_run|ui_url }}",
    )
    Automation(name=AUTOMATION, description="ragprep serve: one webhook POST per failed or crashed ragprep run",
               trigger=trigger, actions=[action]).create()
    say(f"failure notification: automation {AUTOMATION} posts to {notify_url} (webhook block {WEBHOOK_BLOCK})")
