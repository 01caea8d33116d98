"""Null replicates on a Dask cluster (issue 12): the same scores as a local run, replicate by
replicate; errors that say what to do; the executor address and its validation.

The cluster is a real ``distributed.LocalCluster`` with 2 worker processes (one thread each),
started once for the module."""

from __future__ import annotations

import os
import re
import socket
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from lazy_import import lazy

from fairscan.engine.executor_address import EXECUTOR_PATTERN
from fairscan.engine.executors import (
    LOCAL_EXECUTOR,
    DaskExecutor,
    open_executor,
    parse_executor,
)
from fairscan.engine.mdss import ScanProblem
from fairscan.engine.randomization import NullSettings, null_scores, run_replicates
from fairscan.errors import ScanError

distributed = lazy("distributed", reason="needs fairscan[dask] (distributed)")


@pytest.fixture(scope="module")
def dask_address() -> Iterator[str]:
    # the test jobs below live in this module, which the workers cannot import: send them by value
    import cloudpickle

    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    cluster = distributed.LocalCluster(
        n_workers=2, processes=True, threads_per_worker=1, dashboard_address=":0"
    )
    try:
        yield cluster.scheduler_address.replace("tcp://", "dask://")
    finally:
        cluster.close()
        cloudpickle.unregister_pickle_by_value(sys.modules[__name__])


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _cells(seed: int = 0, n: int = 600):
    rng = np.random.default_rng(seed)
    codes = np.column_stack([rng.integers(0, k, n) for k in (2, 3, 4)])
    expected = np.full(n, 0.3)
    observed = (rng.random(n) < expected + 0.1 * (codes[:, 1] == 0)).astype(float)
    return ScanProblem.build(codes, observed, expected).cells()


@pytest.mark.slow
def test_synthetic_null_scores_are_bit_identical_on_the_cluster(dask_address):
    cells = _cells()
    settings = NullSettings(direction=1, penalty=0.5, restarts=5)
    seed = np.random.SeedSequence(2024)
    local = null_scores(cells, settings, seed, 99, workers=1)
    seen: list[int] = []
    with open_executor(dask_address) as executor:
        assert isinstance(executor, DaskExecutor)
        assert executor.name == dask_address
        assert executor.threads() == 2
        remote = null_scores(
            cells, settings, seed, 99, workers=1, executor=executor, on_progress=seen.append
        )
        # another draw (a Poisson null) through the same connection
        local_poisson = null_scores(cells, settings, seed, 40, draw="poisson")
        remote_poisson = null_scores(cells, settings, seed, 40, draw="poisson", executor=executor)
    assert np.array_equal(local, remote)
    assert np.array_equal(local_poisson, remote_poisson)
    assert sum(seen) == 99
    assert len(seen) > 2  # progress per chunk, not once at the end


@pytest.mark.slow
def test_a_sequential_test_stops_at_the_same_replicate_on_the_cluster(dask_address):
    # issue 36: rounds of replicates on the cluster, the stop point and scores as here
    from fairscan.engine.randomization import MdssReplicate
    from fairscan.engine.sequential import StoppingRule

    job = MdssReplicate(_cells(), NullSettings(1, 0.5, 5), np.random.SeedSequence(2024))
    full = run_replicates(job, 150)
    observed = float(np.quantile(full, 0.97))  # near the boundary: several rounds run
    rule = StoppingRule(0.05, 150)
    local = run_replicates(job, 150, observed=observed, rule=rule)
    with open_executor(dask_address) as executor:
        remote = run_replicates(job, 150, observed=observed, rule=rule, executor=executor)
    assert np.array_equal(local, remote)
    assert len(local) > 64 and np.array_equal(local, full[: len(local)])  # 9 rounds


@dataclass(frozen=True)
class _FailsAt:
    index: int

    def __call__(self, index: int) -> float:
        if index == self.index:
            raise ValueError(f"replicate {index} failed")
        return float(index)


@dataclass(frozen=True)
class _PerProcess:
    """Replicate 0 differs between this process and any other: a worker with another build."""

    parent: int

    def __call__(self, index: int) -> float:
        return float(os.getpid() != self.parent)


@pytest.mark.slow
def test_a_failing_replicate_stops_the_run_with_its_error(dask_address):
    with open_executor(dask_address) as executor:
        with pytest.raises(ValueError, match="replicate 17 failed"):
            run_replicates(_FailsAt(17), 40, executor=executor)
        # the connection stays usable for the next scan
        assert np.array_equal(run_replicates(_FailsAt(-1), 10, executor=executor), np.arange(10))


def test_workers_that_compute_other_scores_are_refused(dask_address):
    with open_executor(dask_address) as executor, pytest.raises(ScanError) as caught:
        run_replicates(_PerProcess(os.getpid()), 8, executor=executor)
    assert "compute replicate 0 as" in str(caught.value)
    assert "same fairscan version" in str(caught.value)


def test_an_unreachable_scheduler_is_a_clear_error():
    address = f"dask://127.0.0.1:{_free_port()}"
    with pytest.raises(ScanError) as caught, open_executor(address, timeout=1):
        pass
    text = str(caught.value)
    assert "cannot reach the Dask scheduler of the executor dask://127.0.0.1:" in text
    assert "dask scheduler" in text


def test_a_scheduler_without_workers_is_a_clear_error():
    with distributed.LocalCluster(
        n_workers=0, processes=False, protocol="tcp", dashboard_address=":0"
    ) as empty:
        address = empty.scheduler_address.replace("tcp://", "dask://")
        with (
            pytest.raises(ScanError, match="has no workers") as caught,
            open_executor(address, timeout=0.5),
        ):
            pass
    assert "dask worker tcp://" in str(caught.value)


def test_local_and_no_replicates_never_connect():
    with open_executor("local") as executor:
        assert executor is LOCAL_EXECUTOR
    # nothing listens there, but nothing is run either
    with open_executor(f"dask://127.0.0.1:{_free_port()}", connect=False) as executor:
        assert executor is LOCAL_EXECUTOR


@pytest.mark.parametrize(
    ("text", "parsed"),
    [
        ("local", None),
        ("dask://127.0.0.1:8786", ("127.0.0.1", 8786)),
        ("dask://scheduler.example.org:8786", ("scheduler.example.org", 8786)),
        ("dask://[::1]:8786", ("[::1]", 8786)),
        ("tls://scheduler.example.org:8786", ("scheduler.example.org", 8786)),
    ],
)
def test_executor_addresses(text, parsed):
    assert parse_executor(text) == parsed


@pytest.mark.parametrize(
    "text",
    [
        "",
        "Local",
        "dask",
        "dask://host",
        "tcp://host:8786",
        "dask://host:0",
        "dask://host:70000",
        "tls://host:0",
        "tls://host",
    ],
)
def test_malformed_executors_are_refused(text):
    with pytest.raises(ValueError, match="dask://HOST:PORT"):
        parse_executor(text)
    with pytest.raises(ScanError, match="dask://HOST:PORT"), open_executor(text):
        pass


def test_the_spec_checks_addresses_with_the_engine_rule():
    """One rule of an executor address: the spec validates with the engine's parse_executor."""
    from fairscan.spec import models

    assert models.parse_executor is parse_executor
    assert models.EXECUTOR_PATTERN is EXECUTOR_PATTERN
    assert re.match(models.EXECUTOR_PATTERN, "dask://h:1")


@pytest.mark.slow
def test_an_existing_client_is_used_as_it_is_and_left_open(dask_address):
    """A notebook's Client: bit-identical scores, the scheduler's address in the provenance,
    and the Client still open afterwards (it is the caller's)."""
    cells = _cells(2)
    settings = NullSettings(direction=1, penalty=0.5, restarts=5)
    seed = np.random.SeedSequence(11)
    local = null_scores(cells, settings, seed, 40, workers=1)
    address = dask_address.replace("dask://", "tcp://")
    with distributed.Client(address, set_as_default=False) as client:
        with open_executor(client) as executor:
            assert isinstance(executor, DaskExecutor)
            assert executor.name == dask_address
            remote = null_scores(cells, settings, seed, 40, workers=1, executor=executor)
        assert np.array_equal(local, remote)
        assert client.status == "running"


def test_an_object_that_is_no_client_is_refused():
    with pytest.raises(ScanError, match="not an executor: int"), open_executor(3):
        pass


def test_fairscan_audit_takes_a_client(dask_address, tmp_path):
    import fairscan

    credit = Path(__file__).resolve().parents[2] / "sample_data" / "credit.csv"
    fields = {
        "outcome": "default",
        "prediction": "score",
        "recommendation": "high_risk",
        "attributes": ["sex", "ethnicity", "age_group"],
        "scans": [{"id": "fpr", "type": "fpr_scan", "penalty": 1, "restarts": 10}],
        "significance": {"replicates": 19, "seed": 3},
    }
    here = fairscan.audit(credit, **fields)
    with distributed.Client(dask_address.replace("dask://", "tcp://"), set_as_default=False) as c:
        there = fairscan.audit(credit, executor=c, **fields)
        assert c.status == "running"
    assert there.provenance.executor == dask_address
    assert there.scans[0].findings[0].p_value == here.scans[0].findings[0].p_value
