"""prefect.yaml and the Kubernetes GPU pool template: every entrypoint loads, GPUs reach the pod spec."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from prefect.flows import load_flow_from_entrypoint
from prefect.utilities.templating import apply_values

REPO = Path(__file__).resolve().parents[2]


def test_every_deployment_entrypoint_is_a_flow_and_pools_are_cpu_or_gpu():
    spec = yaml.safe_load((REPO / "prefect.yaml").read_text())
    assert spec["pull"] == [{"prefect.deployments.steps.set_working_directory": {"directory": "{{ $CURATE_PROJECT_DIR }}"}}]
    for d in spec["deployments"]:
        flow = load_flow_from_entrypoint(str(REPO / d["entrypoint"]))
        assert set(d.get("parameters", {})) <= set(flow.parameters.properties), d["name"]
        assert d["work_pool"]["name"] in ("cpu", "gpu")
    pools = {d["name"]: d["work_pool"]["name"] for d in spec["deployments"]}
    assert pools["judge"] == "gpu" and pools["nightly"] == pools["build-version"] == pools["publish"] == "cpu"


def test_kubernetes_template_requests_the_gpus_it_is_given():
    template = json.loads((REPO / "deploy" / "k8s-gpu-base-job-template.json").read_text())
    variables = template["variables"]["properties"]
    assert variables["gpus"]["default"] == 8
    values = {name: v.get("default") for name, v in variables.items()}
    values.update(gpus=4, gpu_node_selector={"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"})
    manifest = apply_values(template["job_configuration"], values, remove_notset=True)["job_manifest"]
    pod = manifest["spec"]["template"]["spec"]
    resources = pod["containers"][0]["resources"]
    assert resources["limits"]["nvidia.com/gpu"] == 4 and resources["requests"]["nvidia.com/gpu"] == 4
    assert pod["nodeSelector"] == {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in pod["tolerations"]
