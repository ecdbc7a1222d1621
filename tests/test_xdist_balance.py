"""tests/_xdist_balance.py's scheduler, driven as xdist's controller drives it, with
stand-ins for the workers (no process is started): every test runs once, the heavy
modules are dealt by weight, and each share runs in a fresh worker when the scheduler can
start one (else in the worker it was dealt to, as before)."""
from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

import _xdist_balance as xb

COLLECTION = ([f"tests/test_a.py::test_{i}" for i in range(12)]
              + [f"tests/test_h1.py::test_h[{i}]" for i in range(3)]
              + [f"tests/test_b.py::test_{i}" for i in range(5)]
              + [f"tests/test_h2.py::test_h{i}" for i in range(2)]
              + ["tests/test_h3.py::test_one"])
HEAVY = {"tests/test_h1.py": 3.0, "tests/test_h2.py": 2.0, "tests/test_h3.py": 1.0}


class Worker:
    """What the scheduler uses of xdist's WorkerController."""

    def __init__(self, name: str) -> None:
        self.gateway = SimpleNamespace(id=name)
        self.shutting_down = False

    def shutdown(self) -> None:
        self.shutting_down = True

    def send_runtest_some(self, indices: list[int]) -> None:
        pass    # the scheduler's node2pending is the worker's queue here

    def __repr__(self) -> str:
        return self.gateway.id


class Config:
    def getvalue(self, name: str) -> Any:
        return ["2*popen"] if name == "tx" else None

    def getoption(self, name: str) -> Any:
        return None


def run(fresh: bool, collection: list[str] = COLLECTION) -> tuple[dict[str, list[str]], Any]:
    """Runs the collection to its end: {nodeid: the workers that ran it} in the order run,
    the scheduler."""
    started: list[Worker] = []
    names = iter(range(2, 100))

    def new_worker(node: Worker) -> Worker:
        started.append(Worker(f"gw{next(names)}"))
        return started[-1]

    sched = xb.BalancedLoadScheduling(Config(), SimpleNamespace(loadsched=lambda *a: None),
                                      heavy=HEAVY, new_worker=new_worker)
    sched.new_worker = new_worker if fresh else None
    live = [Worker("gw0"), Worker("gw1")]
    for w in live:
        sched.add_node(w)
    for w in live:
        sched.add_node_collection(w, COLLECTION)
    sched.schedule()
    ran: dict[str, list[str]] = {}
    for _ in range(1000):
        busy = False
        for w in list(live):        # each worker runs one test, as xdist reports them
            queue = sched.node2pending.get(w)
            if queue:
                ran.setdefault(COLLECTION[queue[0]], []).append(w.gateway.id)
                sched.mark_test_complete(w, queue[0])
                busy = True
            elif w.shutting_down:   # it ends (xdist: workerfinished)
                assert sched.remove_node(w) is None
                live.remove(w)
                busy = True
        while started:              # a new worker comes up and collects
            w = started.pop(0)
            sched.add_node(w)
            sched.add_node_collection(w, collection)
            sched.schedule()
            live.append(w)
            busy = True
        if not busy:
            break
    assert not live, live
    return ran, sched


@pytest.mark.parametrize("fresh", [True, False])
def test_every_test_runs_once_and_the_shares_last(fresh):
    ran, sched = run(fresh)
    assert sched.tests_finished and not sched.has_pending
    assert sorted(ran) == sorted(COLLECTION)
    assert all(len(w) == 1 for w in ran.values()), ran
    where = {m: {ran[t][0] for t in COLLECTION if t.startswith(m)} for m in HEAVY}
    assert all(len(w) == 1 for w in where.values()), where   # a module stays whole
    # dealt by weight: h1 (3) to one worker, h2 + h3 (2 + 1) to the other
    assert where["tests/test_h2.py"] == where["tests/test_h3.py"] != where["tests/test_h1.py"]
    heavy_workers = set.union(*where.values())
    common_workers = {ran[t][0] for t in COLLECTION if xb.key_of(t, HEAVY) is None}
    if fresh:
        assert heavy_workers == {"gw2", "gw3"} and common_workers <= {"gw0", "gw1"}
    else:
        assert heavy_workers == {"gw0", "gw1"}
        for w in heavy_workers:     # its share after every common test it ran
            order = [t for t in ran if ran[t][0] == w]     # (in the order run)
            last_common = max(i for i, t in enumerate(order) if xb.key_of(t, HEAVY) is None)
            first_heavy = min(i for i, t in enumerate(order) if xb.key_of(t, HEAVY))
            assert last_common < first_heavy, order


def test_a_fresh_worker_that_collects_other_tests_stops_the_run():
    # (xdist only logs a different collection; the share would wait for that worker for ever)
    with pytest.raises(RuntimeError, match="collected other tests"):
        run(True, collection=COLLECTION[:-1])
