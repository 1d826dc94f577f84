"""schedctl end to end: the real command (a subprocess) against a real `schedd serve`.

The daemons run the lockstep clock, so virtual time moves only when a test advances it.
One daemon serves the whole module (and one more with a tokens file for the auth tests):
each test makes its own jobs and reads the clock instead of assuming it.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from daemon_proc import DaemonProc, free_port

ENV = {k: v for k, v in os.environ.items() if k not in ("SCHEDD_SERVER", "SCHEDD_TOKEN")}


class Result:
    def __init__(self, proc: subprocess.CompletedProcess[str]):
        self.rc = proc.returncode
        self.out = proc.stdout
        self.err = proc.stderr

    def json(self) -> Any:
        return json.loads(self.out)

    def __repr__(self) -> str:
        return f"rc={self.rc}\nstdout:\n{self.out}\nstderr:\n{self.err}"


def schedctl(*args: str, server: str | None = None, timeout: float = 30) -> Result:
    cmd = [sys.executable, "-m", "schedd_clients.schedctl"]
    if server is not None:
        cmd += ["--server", server]
    proc = subprocess.run([*cmd, *args], capture_output=True, text=True, env=ENV,
                          timeout=timeout)
    return Result(proc)


class Ctl:
    """schedctl bound to one daemon (and optionally a token)."""

    def __init__(self, daemon: DaemonProc, token: str | None = None):
        self.daemon = daemon
        self.token = token

    def __call__(self, *args: str, timeout: float = 30) -> Result:
        extra = ("--token", self.token) if self.token else ()
        return schedctl(*extra, *args, server=self.daemon.address, timeout=timeout)

    def ok(self, *args: str) -> Result:
        r = self(*args)
        assert r.rc == 0, r
        return r

    def now(self) -> float:
        return float(self.ok("--json", "clock").json()["now"])

    def submit(self, *args: str) -> int:
        out = self.ok("submit", *args).out
        m = re.fullmatch(r"submitted job (\d+) at t=[\d.]+\n", out)
        assert m, out
        return int(m.group(1))

    def state(self, job_id: int) -> str:
        return str(self.ok("status", str(job_id), "--json").json()["state"])


def fails(r: Result, code: str) -> None:
    assert r.rc == 1, r
    assert r.err.startswith(f"schedctl: {code}: "), r
    assert r.out == "", r


@pytest.fixture(scope="module")
def daemon() -> Iterator[DaemonProc]:
    with DaemonProc("--clock", "lockstep", "--cluster", "nodes:64") as d:
        yield d


@pytest.fixture
def ctl(daemon: DaemonProc) -> Ctl:
    return Ctl(daemon)


def field(status_text: str, name: str) -> str:
    m = re.search(rf"^{name}\s{{2,}}(.*)$", status_text, re.MULTILINE)
    assert m, status_text
    return m.group(1)


def test_submit_status_advance_cancel(ctl: Ctl) -> None:
    now = ctl.now()
    r = ctl.ok("submit", "--nodes", "4", "--walltime", "100", "--at", str(now + 10.25))
    m = re.fullmatch(r"submitted job (\d+) at t=(\S+)\n", r.out)
    assert m, r
    job = int(m.group(1))
    assert float(m.group(2)) == pytest.approx(now + 10.25)
    status = ctl.ok("status", str(job)).out
    assert field(status, "state") == "pending"
    assert field(status, "class") == "batch"
    assert field(status, "nodes") == "4"
    assert field(status, "first start") == "-"
    assert field(status, "owner") == "operator"

    assert ctl.ok("clock", "advance", "--by", "10.25").out.startswith(f"t={now + 10.25:g} ")
    status = ctl.ok("status", str(job)).out
    assert field(status, "state") == "running"
    assert float(field(status, "first start")) == pytest.approx(now + 10.25)

    big = ctl.submit("--nodes", "64", "--walltime", "50")  # cannot start while `job` runs
    assert field(ctl.ok("status", str(big)).out, "state") == "queued"
    assert ctl.ok("cancel", str(big)).out == f"cancel of job {big} accepted\n"
    ctl.ok("clock", "advance", "--by", "1")
    assert ctl.state(big) == "JOB_STATE_CANCELLED"
    fails(ctl("cancel", str(big)), "FAILED_PRECONDITION")  # already cancelled
    ctl.ok("cancel", str(job))


def test_list_filters_and_paging(ctl: Ctl) -> None:
    at = str(ctl.now() + 1000)  # pending: they take no nodes while the other tests run
    ids = [ctl.submit("--nodes", "1", "--walltime", "5", "--user", "4242", "--at", at)
           for _ in range(3)]
    ids += [ctl.submit("--nodes", "2", "--walltime", "5", "--user", "4242", "--at", at,
                       "--class", "malleable", "--min-nodes", "1") for _ in range(2)]

    r = ctl.ok("list", "--user", "4242", "--limit", "2", "--all")
    lines = r.out.splitlines()
    assert lines[0].split() == ["ID", "CLASS", "STATE", "NODES", "ALLOC", "SUBMIT", "START",
                                "WAIT", "OWNER"]
    assert [int(line.split()[0]) for line in lines[1:-1]] == ids
    assert lines[-1] == "(5 jobs)"
    assert lines[1].split()[1:4] == ["batch", "pending", "1"]

    jobs = ctl.ok("--json", "list", "--user", "4242", "--limit", "2", "--all").json()
    assert isinstance(jobs, list)
    assert [j["job_id"] for j in jobs] == ids
    assert {j["state"] for j in jobs} == {"JOB_STATE_PENDING"}

    page = ctl.ok("list", "--user", "4242", "--limit", "2").out.splitlines()
    assert len(page) == 4
    assert page[-1] == f"(2 of 5 jobs; more with --page-token {ids[1]} or --all)"
    page = ctl.ok("list", "--user", "4242", "--limit", "2", "--page-token", str(ids[1]),
                  "--json").json()
    assert [j["job_id"] for j in page["jobs"]] == ids[2:4]
    assert page["total"] == 5

    def listed(*filters: str) -> list[int]:
        return [j["job_id"] for j in ctl.ok("list", "--json", "--all", "--user", "4242",
                                            *filters).json()]

    assert listed("--class", "malleable") == ids[3:]
    assert listed("--class", "batch", "malleable") == ids
    assert listed("--state", "running") == []
    assert listed("--state", "queued", "--state", "pending") == ids
    assert listed("--owner", "operator") == ids
    assert listed("--owner", "nobody") == []
    assert ctl.ok("list", "--user", "4243").out == "(0 of 0 jobs)\n"
    for job in ids:
        ctl.ok("cancel", str(job))


def test_ecc_event_in_watch(ctl: Ctl) -> None:
    job = ctl.submit("--nodes", "2", "--walltime", "1000")
    assert "accepted" in ctl.ok("ecc", str(job), "et", "50").out
    r = ctl("watch", "--from", "1", "--job-id", str(job), "--kind", "ecc", "--count", "1",
            timeout=20)
    assert r.rc == 0, r
    [line] = r.out.splitlines()
    words = line.split()
    assert words[2:5] == ["ecc", "job", str(job)]
    assert words[-1] == "ET:applied"
    assert re.fullmatch(r"t=\d+(\.\d{1,3})?", words[1])

    r = ctl("watch", "--from", "1", "--job-id", str(job), "--count", "3", "--json",
            timeout=20)
    assert r.rc == 0, r
    events = [json.loads(line) for line in r.out.splitlines()]
    assert [e["kind"] for e in events] == ["submitted", "queued", "started"]
    assert all(e["job_id"] == job for e in events)
    assert events[0]["seq"] < events[1]["seq"] < events[2]["seq"]
    assert field(ctl.ok("status", str(job)).out, "walltime") == "1050"
    assert ctl.ok("watch", "--count", "0").out == ""
    ctl.ok("cancel", str(job))


def test_watch_replays_batches_event_by_event(ctl: Ctl) -> None:
    """watch asks for batches (one message carries many events): a replay from the first
    event prints each event once, in sequence order, and --count stops inside a batch."""
    ids = [ctl.submit("--nodes", "1", "--walltime", "100") for _ in range(6)]
    everything = ctl("watch", "--from", "1", "--count", "12", "--json", timeout=20)
    assert everything.rc == 0, everything
    seqs = [json.loads(line)["seq"] for line in everything.out.splitlines()]
    assert len(seqs) == 12 and seqs == sorted(set(seqs)), seqs
    assert all(not json.loads(line).get("more") for line in everything.out.splitlines())
    first = ctl("watch", "--from", str(seqs[0]), "--count", "5", timeout=20)
    assert first.rc == 0, first
    assert [int(line.split()[0]) for line in first.out.splitlines()] == seqs[:5]
    for job in ids:
        ctl.ok("cancel", str(job))


def test_refusals(ctl: Ctl) -> None:
    job = ctl.submit("--nodes", "1", "--walltime", "100")
    fails(ctl("checkpoint-done", str(job)), "FAILED_PRECONDITION")
    ctl.ok("clock", "advance", "--by", "1")
    now = ctl.now()
    fails(ctl("notice", "--job-id", "900001", "--arrival", str(now - 1), "--nodes", "2",
              "--walltime", "60"), "INVALID_ARGUMENT")
    ok = ctl.ok("notice", "--job-id", "900001", "--arrival", str(now + 100), "--nodes", "2",
                "--walltime", "60")
    assert ok.out.startswith("notice for job 900001 accepted")
    fails(ctl("status", "987654"), "NOT_FOUND")
    fails(ctl("cancel", "987654"), "NOT_FOUND")
    fails(ctl("ecc", "987654", "RP", "1"), "NOT_FOUND")
    fails(ctl("submit", "--nodes", "65", "--walltime", "10"), "INVALID_ARGUMENT")
    fails(ctl("clock", "pause"), "FAILED_PRECONDITION")  # lockstep: nothing to pause
    ctl.ok("cancel", str(job))


def test_json_output(ctl: Ctl) -> None:
    sub = ctl.ok("--json", "submit", "--nodes", "3", "--walltime", "30",
                 "--request-id", "json-1").json()
    assert isinstance(sub, dict)
    job = sub["job_id"]
    assert isinstance(job, int)
    again = ctl.ok("submit", "--nodes", "3", "--walltime", "30", "--request-id", "json-1",
                   "--json").json()
    assert again["job_id"] == job and again["duplicate"] is True
    status = ctl.ok("status", str(job), "--json").json()
    assert status["nodes"] == 3 and status["job_class"] == "JOB_CLASS_BATCH"
    cluster = ctl.ok("cluster", "--json").json()
    assert cluster["total_nodes"] == 64
    assert cluster["clock"]["mode"] == "lockstep"
    clock = ctl.ok("clock", "advance", "--until-idle", "--json").json()
    assert clock["idle"] is True
    assert ctl.state(job) == "JOB_STATE_COMPLETED"


def test_human_output(ctl: Ctl) -> None:
    text = ctl.ok("cluster").out
    assert re.search(r"^cluster\s+nodes-64 \(nodes:64\): 64 nodes", text, re.MULTILINE), text
    for key in ("nodes", "utilisation", "jobs", "queued", "running", "policy", "clock"):
        assert re.search(rf"^{key}\s", text, re.MULTILINE), text
    assert re.fullmatch(r"t=\d+(\.\d{1,3})? \(lockstep[^)]*\); engine at t=\S+\n",
                        ctl.ok("clock").out)
    assert ctl.ok("clock", "get").out.startswith("t=")
    job = ctl.submit("--nodes", "8", "--walltime", "7.123456", "--class", "on-demand")
    status = ctl.ok("status", str(job)).out
    assert field(status, "class") == "ondemand"
    assert field(status, "walltime") == "7.123"
    ctl.ok("cancel", str(job))


def test_usage_errors() -> None:
    for args in (["submit", "--walltime", "10"], ["submit", "--nodes", "0", "--walltime", "1"],
                 ["ecc", "1", "XX", "5"], ["list", "--state", "sleeping"], [],
                 ["clock", "advance"], ["clock", "advance", "--to", "1", "--by", "2"],
                 ["status", "abc"]):
        r = schedctl(*args, server="127.0.0.1:1")
        assert r.rc == 2, (args, r)
        assert "usage:" in r.err


def test_help() -> None:
    r = schedctl("--help")
    assert r.rc == 0
    for command in ("submit", "cancel", "status", "list", "notice", "ecc",
                    "checkpoint-done", "watch", "cluster", "clock", "replay"):
        assert command in r.out
        if command != "replay":
            sub = schedctl(command, "--help")
            assert sub.rc == 0 and sub.out.startswith(f"usage: schedctl {command}"), sub


def test_replay_delegates() -> None:
    pytest.importorskip("schedd_clients.replay")
    r = schedctl("replay", "--help")
    assert r.rc == 0, r
    assert r.out.startswith("usage: schedd-replay")


def test_unreachable_server() -> None:
    address = f"127.0.0.1:{free_port()}"
    for args in (["status", "1"], ["watch"], ["clock", "advance", "--by", "1"]):
        r = schedctl(*args, server=address, timeout=20)
        assert r.rc == 1, r
        assert r.err.startswith(f"schedctl: cannot reach the schedd daemon at {address}"), r
        assert len(r.err.splitlines()) == 1


# ---------------------------------------------------------------------- authentication
@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DaemonProc]:
    tokens: Path = tmp_path_factory.mktemp("auth") / "tokens"
    tokens.write_text("alice-token user alice\nbob-token user bob\n"
                      "ops-token operator ops\n")
    with DaemonProc("--clock", "lockstep", "--cluster", "nodes:64", "--tokens",
                    str(tokens)) as d:
        yield d


def test_auth(secured: DaemonProc) -> None:
    alice, bob, ops = Ctl(secured, "alice-token"), Ctl(secured, "bob-token"), Ctl(secured,
                                                                                  "ops-token")
    nobody, forger = Ctl(secured), Ctl(secured, "forged-token")
    job = alice.submit("--nodes", "2", "--walltime", "100")
    assert field(alice.ok("status", str(job)).out, "owner") == "alice"
    fails(bob("cancel", str(job)), "PERMISSION_DENIED")
    fails(bob("ecc", str(job), "ET", "10"), "PERMISSION_DENIED")
    fails(bob("clock", "advance", "--by", "1"), "PERMISSION_DENIED")
    fails(alice("clock", "advance", "--until-idle"), "PERMISSION_DENIED")
    fails(nobody("status", str(job)), "UNAUTHENTICATED")
    fails(nobody("submit", "--nodes", "1", "--walltime", "1"), "UNAUTHENTICATED")
    fails(forger("clock"), "UNAUTHENTICATED")
    assert bob.ok("list", "--owner", "alice", "--json").json()["total"] == 1
    ops.ok("clock", "advance", "--by", "1")
    alice.ok("cancel", str(job))
    job2 = bob.submit("--nodes", "1", "--walltime", "100")
    ops.ok("cancel", str(job2))  # an operator may act on anyone's job
    env_token = subprocess.run(
        [sys.executable, "-m", "schedd_clients.schedctl", "status", str(job2)],
        capture_output=True, text=True, timeout=30,
        env={**ENV, "SCHEDD_SERVER": secured.address, "SCHEDD_TOKEN": "bob-token"})
    assert env_token.returncode == 0, env_token.stderr
    assert "cancelled" in env_token.stdout


def test_durations_as_sbatch_writes_them(ctl: Ctl) -> None:
    """--walltime/--runtime/--setup take seconds, [D-]H:MM:SS, M:SS or 1h30m."""
    at = str(ctl.now() + 5000)
    for text, seconds in (("5400", 5400), ("1:30:00", 5400), ("1h30m", 5400), ("90:00", 5400),
                          ("1-00:00:00", 86400), ("2.5h", 9000)):
        job = ctl.submit("--nodes", "1", "--walltime", text, "--setup", "1m", "--at", at)
        got = ctl.ok("status", str(job), "--json").json()
        assert got["walltime"] == seconds, text
    r = ctl("submit", "--nodes", "1", "--walltime", "1h2h")
    assert r.rc == 2 and "argument --walltime: expected a duration (seconds (5400), " \
        "[D-]H:MM:SS (1:30:00) or units (1h30m)), got '1h2h'" in r.err, r


def test_unset_job_fields_are_absent_not_minus_one(ctl: Ctl) -> None:
    """Job uses field presence: a pending job has no first_start/end_time/predicted_end
    (a reflection client reads "not set"), a dedicated one has its requested_start."""
    now = ctl.now()
    job = ctl.submit("--nodes", "1", "--walltime", "10", "--at", str(now + 7000))
    got = ctl.ok("status", str(job), "--json").json()
    for name in ("first_start", "last_start", "predicted_end", "end_time", "requested_start",
                 "min_nodes"):
        assert name not in got, (name, got)
    assert got["submit_time"] == pytest.approx(now + 7000) and got["user"] == -1
    ded = ctl.submit("--nodes", "1", "--walltime", "10", "--class", "dedicated",
                     "--requested-start", str(now + 9000), "--at", str(now + 7000))
    assert ctl.ok("status", str(ded), "--json").json()["requested_start"] == \
        pytest.approx(now + 9000)
    text = ctl.ok("status", str(job)).out
    assert field(text, "first start") == "-" and field(text, "ended") == "-"


def test_misspelt_command_and_option_say_did_you_mean() -> None:
    r = schedctl("lsit")
    assert r.rc == 2 and "invalid choice: 'lsit'" in r.err and "(did you mean 'list'?)" in r.err
    r = schedctl("submit", "--nodes", "1", "--walltime", "5", "--wallclock", "5")
    assert r.rc == 2 and "(did you mean '--walltime' for '--wallclock'?)" in r.err
    r = schedctl("list", "--state", "runing")
    assert r.rc == 2 and "unknown job state 'runing' (did you mean 'running'?)" in r.err
    r = schedctl("submit", "--nodes", "1", "--walltime", "5", "--class", "maleable")
    assert r.rc == 2 and "unknown job class 'maleable' (did you mean 'malleable'?)" in r.err


def test_wait_for_a_daemon_that_is_not_there_is_one_sentence() -> None:
    port = free_port()
    r = schedctl("--wait", "1", "cluster", server=f"127.0.0.1:{port}")
    assert r.rc == 1 and r.err == (f"schedctl: the daemon at 127.0.0.1:{port} did not come "
                                   "up within 1 s (--wait)\n"), r
