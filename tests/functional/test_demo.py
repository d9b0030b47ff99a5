"""The README's demo command over the real RabbitMQ (a virtual host of
the test's own): every server boots, and a clean run prints no warning."""

import subprocess

import pytest

from tests.functional import cluster as cluster_mod

pytestmark = pytest.mark.functional


def test_the_demo_over_rabbitmq_boots_everything_and_warns_of_nothing(
        tmp_path):
    with cluster_mod.Cluster(tmp_path, 'sqlite') as cluster:
        result = subprocess.run(
            [cluster_mod._script('gantt-demo'), '--transport-url',
             cluster.transport_url], capture_output=True, text=True,
            env=cluster.env(), timeout=240)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip().splitlines()[-1].endswith(
        ': 100 active'), result.stdout[-500:]
    warnings = [line for line in result.stderr.splitlines()
                if ' WARNING ' in line or ' ERROR ' in line]
    assert warnings == []
