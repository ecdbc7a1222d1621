"""tests/_xdist_balance.py's scheduler, driven as xdist's controller drives it, with
stand-ins for the workers (no process is started): every test runs once, the heavy
modules are dealt by weight, and each share runs in a fresh worker when the scheduler can
start one (else in the worker it was dealt to, as before), which collects only its share's
files as conftest.py does (or everything, as a worker that ignores the variable)."""
from __future__ import annotations

import os
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

    def __init__(self, name: str, collection: list[str] = COLLECTION) -> None:
        self.gateway = SimpleNamespace(id=name)
        self.shutting_down = False
        self.collection = collection    # what it collects (its indices)

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


def run(fresh: bool, collection: list[str] = COLLECTION, *,
        crash_collecting: frozenset[str] = frozenset(), crash_at: dict[str, int] | None = None,
        late_reports: bool = False, new_worker_fails: bool = False, only: bool = True,
        ) -> tuple[dict[str, list[str]], Any]:
    """Runs the collection to its end: {nodeid: the workers that ran it} in the order run,
    the scheduler.  Faults, as xdist's controller meets them: the workers named in
    ``crash_collecting`` die after starting, before their collection arrives; a worker in
    ``crash_at`` dies running its n-th test (counting from 0); for each crash xdist removes
    the worker and starts a replacement (not through the scheduler).  ``late_reports``:
    a removed worker's report of its last test arrives once more after its removal (a
    worker whose channel failed is removed while its queued events still come).
    ``new_worker_fails``: starting a fresh worker raises.  ``only``: a fresh worker collects
    only the files its environment names (xb.ONLY; conftest.py), else ``collection``; the
    replacement of a crashed worker collects ``collection`` (no variable)."""
    started: list[Worker] = []
    names = iter(range(2, 100))
    crash_at = crash_at or {}

    def new_worker(node: Worker) -> Worker:
        if new_worker_fails:
            raise OSError("no process")
        files = os.environ.get(xb.ONLY)
        assert files, "a fresh worker is started with the files of its share"
        mine = [t for t in collection if t.partition("::")[0] in files.split(",")]
        started.append(Worker(f"gw{next(names)}", mine if only else collection))
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
    count: dict[str, int] = {}

    def crashed(w: Worker) -> None:  # xdist's worker_errordown: remove it, start another
        live.remove(w)
        started.append(Worker(f"gw{next(names)}", collection))

    for _ in range(1000):
        busy = False
        for w in list(live):        # each worker runs one test, as xdist reports them
            queue = sched.node2pending.get(w)
            if queue:
                test = queue[0]
                ran.setdefault(w.collection[test], []).append(w.gateway.id)
                n = count[w.gateway.id] = count.get(w.gateway.id, -1) + 1
                if crash_at.get(w.gateway.id) == n:
                    assert sched.remove_node(w) == w.collection[test]
                    crashed(w)
                else:
                    sched.mark_test_complete(w, test)
                    if late_reports and w.shutting_down and not sched.node2pending[w]:
                        assert sched.remove_node(w) is None
                        live.remove(w)
                        sched.mark_test_complete(w, test)   # (xdist: KeyError)
                        sched.check_schedule(w)
                        assert sched.remove_node(w) is None
                busy = True
            elif w.shutting_down:   # it ends (xdist: workerfinished)
                assert sched.remove_node(w) is None
                live.remove(w)
                busy = True
        while started:              # a new worker comes up and collects
            w = started.pop(0)
            sched.add_node(w)
            if w.gateway.id in crash_collecting:
                assert sched.remove_node(w) is None
                started.append(Worker(f"gw{next(names)}", collection))
                continue
            sched.add_node_collection(w, w.collection)
            sched.schedule()
            live.append(w)
            busy = True
        if not busy:
            break
    assert not live, live
    assert sched.tests_finished and not sched.has_pending
    assert not sched.pending and not sched.waiting and not any(sched.reserved.values())
    return ran, sched


@pytest.mark.parametrize("fresh, only", [(True, True), (True, False), (False, True)])
def test_every_test_runs_once_and_the_shares_last(fresh, only):
    ran, sched = run(fresh, only=only)
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


def _ran_once_each(ran: dict[str, list[str]]) -> None:
    assert sorted(ran) == sorted(COLLECTION)
    assert all(len(w) == 1 for w in ran.values()), ran


def test_a_late_report_of_a_removed_worker_is_ignored():
    # xdist's LoadScheduling raised KeyError: <WorkerController gw0> on such a report
    for fresh in (True, False):
        ran, _ = run(fresh, late_reports=True)
        _ran_once_each(ran)


def test_a_fresh_worker_that_dies_while_collecting_leaves_its_share_to_its_replacement():
    # gw2 (the first fresh worker) dies before its collection arrives; xdist starts gw4
    # (gw4 collects everything, having no variable; gw3 runs its own share, not gw2's)
    for crashed in ("gw2", "gw3"):
        ran, _ = run(True, crash_collecting=frozenset({crashed}))
        _ran_once_each(ran)
        heavy = {ran[t][0] for t in COLLECTION if xb.key_of(t, HEAVY)}
        assert heavy == {"gw2", "gw3", "gw4"} - {crashed}, heavy


def test_a_worker_that_dies_gives_its_tests_back():
    # a first worker dies in the common queue (its share goes back to the common queue),
    # and a fresh worker dies in its share: every test runs, the crashed ones once more
    # at most (xdist reports the test that was running as failed and reruns the rest)
    # (a fresh worker that collected its share's files only gives its tests back by their
    # place in the whole collection: the crashed test is named, the others rerun)
    for fresh, crash, only in [(True, {"gw0": 3}, True), (True, {"gw2": 1}, True),
                               (True, {"gw3": 0}, True), (True, {"gw2": 1}, False),
                               (False, {"gw1": 9}, True)]:
        ran, _ = run(fresh, crash_at=crash, only=only)
        assert sorted(ran) == sorted(COLLECTION)
        assert sum(len(w) > 1 for w in ran.values()) <= 1, (crash, ran)


def test_without_a_fresh_worker_a_worker_runs_its_share_itself():
    ran, sched = run(True, new_worker_fails=True)
    _ran_once_each(ran)
    assert sched.new_worker is None
    assert {ran[t][0] for t in COLLECTION if xb.key_of(t, HEAVY)} == {"gw0", "gw1"}


def test_shares_are_dealt_by_cpu_within_the_memory_bound():
    weights = {"a": 500.0, "b": 400.0, "c": 300.0, "d": 100.0}
    cpu = {"a": 10.0, "b": 100.0, "c": 50.0, "d": 40.0}
    # by CPU: b alone against c + d + a (100 against 100)
    assert xb.deal(weights, 2, cpu) == {"b": 0, "c": 1, "d": 1, "a": 1}
    # a's 500 MB do not fit beside c + d's 400 within 800: it goes where it fits
    assert xb.deal(weights, 2, cpu, cap=800) == {"b": 0, "c": 1, "d": 1, "a": 0}
    # nowhere within the bound: the worker with the least MB (not the least CPU)
    assert xb.deal({"x": 5.0, "y": 6.0, "z": 3.0}, 2, {"x": 3.0, "y": 2.0, "z": 1.0},
                   cap=4) == {"x": 0, "y": 1, "z": 0}
    assert xb.deal(weights, 2) == {"a": 0, "b": 1, "c": 1, "d": 0}   # by MB alone
    # the suite's own figures: the two shares' CPU within 15%, each within the bound, the
    # joined keys with the one they join
    weights_, cpu_, unit = xb.units(set(xb.HEAVY), xb.HEAVY, xb.CPU, xb.JOIN)
    dealt = xb.deal(weights_, 2, cpu_, xb.SHARE_MB)
    where = {k: dealt[u] for k, u in unit.items()}
    assert all(where[k] == where[v] for k, v in xb.JOIN.items())
    shares = [[k for k in where if where[k] == j] for j in (0, 1)]
    cpus = [sum(xb.CPU[k] for k in share) for share in shares]
    assert max(cpus) < 1.15 * min(cpus), cpus
    assert all(sum(xb.HEAVY[k] for k in share) <= xb.SHARE_MB for share in shares)
    assert set(xb.CPU) == set(xb.HEAVY)


def test_joined_keys_share_a_worker():
    # h3 (1 MB) joins h1 (3): h2 (2) goes alone to the other worker; where the key joined to
    # is not collected, a key is dealt alone
    join = {"tests/test_h3.py": "tests/test_h1.py"}
    weights, cpu, unit = xb.units(set(HEAVY), HEAVY, None, join)
    assert weights == {"tests/test_h1.py": 4.0, "tests/test_h2.py": 2.0} and cpu is None
    assert unit["tests/test_h3.py"] == "tests/test_h1.py"
    h3 = "tests/test_h3.py"
    assert xb.units({h3}, HEAVY, {h3: 7.0}, join) == ({h3: 1.0}, {h3: 7.0}, {h3: h3})
    sched = xb.BalancedLoadScheduling(Config(), SimpleNamespace(loadsched=lambda *a: None),
                                      heavy=HEAVY, new_worker=lambda node: node, join=join)
    sched.new_worker = None
    workers = [Worker("gw0"), Worker("gw1")]
    for w in workers:
        sched.add_node(w)
    for w in workers:
        sched.add_node_collection(w, COLLECTION)
    sched.schedule()
    shares = [{COLLECTION[i].partition("::")[0] for i in sched.reserved[w]} for w in workers]
    assert sorted(map(sorted, shares)) == [["tests/test_h1.py", "tests/test_h3.py"],
                                           ["tests/test_h2.py"]], shares
