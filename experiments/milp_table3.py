"""Table 3 of the real-time paper: the offline MILP against the online `wcjs` heuristic.

    .venv/bin/python experiments/milp_table3.py [--milp-only] [--markdown FILE]
        [--seed 2019] [--count 20] [--time-limit 60] [--logs DIR]

Writes the 20 Table 3 logs (5 BJs + 2 RTJs on bgq:16, `schedd milp generate` rule, seed
2019; docs/milp.md), reads each back as the CLI does and solves the MILP at the RTJ
threshold 1.2 with the upward search (§5.1) twice: `resume=same` (a preempted BJ resumes
on its own partition: the paper's model) and `resume=any` (on any partition of its size).
"any <= same": any's mean BJ SD at same's threshold (one more solve when the thresholds
differ) <= same's — `any`'s space holds every `same` schedule.

Unless --milp-only, also simulates the same trace with `wcjs` (JIT checkpoints, no
periodic ones) and checks "MILP no worse than wcjs" for each variant: the MILP's smallest
feasible RTJ threshold <= wcjs's mean RTJ SD, and the MILP's mean BJ SD at threshold
max(search result, wcjs's mean RTJ SD) <= wcjs's mean BJ SD. Slowdowns are plain
(end - submit) / runtime with the trace's runtime, for both. A wcjs schedule can lie
outside a variant's space: a BJ preempted twice or split below 10% / above 90% (outside
both), resumed on another partition (outside `same` only). The "outside" columns name such
BJs, and a failed check on such a log reads "n/a". The headline check is `any`'s: its
space holds every wcjs schedule that preempts each BJ at most once (with 10% pieces).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from schedd.core.cluster_spec import parse_cluster  # noqa: E402
from schedd.milp.cli import read_jobs  # noqa: E402
from schedd.milp.instances import DEFAULT_SEED, write_table3  # noqa: E402
from schedd.milp.model import (  # noqa: E402
    RESUME_MODES,
    Instance,
    MilpResult,
    SolveOptions,
    make_instance,
)
from schedd.milp.model import solve as milp_solve  # noqa: E402
from schedd.milp.model import solve_at as milp_solve_at  # noqa: E402

PAPER = {"Formulation": (1.50, 1.08), "WCJS": (2.54, 1.50)}
THRESHOLD = 1.2
MIN_PIECE = 0.1  # eq. 51
EPS = 1e-6  # solver tolerances: "no worse" up to this


class Spy:
    """Wraps a policy and records, for every Start, the block the engine gave the job and,
    for every Preempt, when it was asked. The engine applies each decision before asking
    the generator for the next one, so after a `yield` the job is already placed."""

    def __init__(self, policy):
        self._policy = policy
        self.starts: dict[int, list[tuple[float, int]]] = {}
        self.preempts: dict[int, list[float]] = {}

    def __getattr__(self, name):
        return getattr(self._policy, name)

    def schedule(self, view):
        from schedd.core.decisions import Preempt, Start

        for d in self._policy.schedule(view):
            if isinstance(d, Preempt):
                self.preempts.setdefault(d.job_id, []).append(view.now)
            yield d
            if isinstance(d, Start) and d.job_id in view.running:
                alloc = view.running[d.job_id].allocation
                block = alloc.block if alloc is not None else -1
                self.starts.setdefault(d.job_id, []).append((view.now, block))


def wcjs_slowdowns(path: Path, cluster) -> dict:
    """Simulate the trace with wcjs (JIT) and return the mean plain slowdowns per class."""
    from schedd.core.checkpoint import CheckpointPolicy
    from schedd.core.engine import EngineOptions
    from schedd.core.results import CLASS_CODES
    from schedd.policies import make_policy
    from schedd.sim import simulate
    from schedd.traces import normalize, read_trace

    trace = normalize(read_trace(path), max_nodes=cluster.total_nodes)
    spy = Spy(make_policy("wcjs", ["ckpt=jit"], cluster))
    run = simulate(trace, cluster, spy,  # type: ignore[arg-type]
                   engine_options=EngineOptions(checkpoint=CheckpointPolicy(periodic="none")))
    res = run.results
    # the trace's runtime: res["executed"] also holds the JIT write and restart read
    runtime_of = dict(zip(trace.columns["job_id"].tolist(),
                          trace.columns["runtime"].tolist(), strict=True))
    runtime = np.array([runtime_of[int(i)] for i in res["id"]])
    sd = (res["end"] - res["submit"]) / runtime
    cls = np.array(CLASS_CODES)[res["job_class"]]
    batch, rt = cls == "B", cls == "R"
    # why the wcjs schedule is not a schedule of a variant of the model
    outside: dict[str, list[str]] = {mode: [] for mode in RESUME_MODES}
    for i, p, b, rt_ in zip(res["id"].tolist(), res["preemptions"].tolist(), batch.tolist(),
                            runtime.tolist(), strict=True):
        if not b or p == 0:
            continue
        if p >= 2:  # at most one preemption in both variants
            for mode in RESUME_MODES:
                outside[mode].append(f"BJ {i} preempted {p} times")
            continue
        starts = spy.starts.get(i, [])
        if len({blk for _, blk in starts}) > 1:  # only "same" forbids it
            outside["same"].append(f"BJ {i} resumed on another partition")
        first = spy.preempts.get(i, [None])[0]
        if starts and first is not None:
            share = (first - starts[0][0]) / rt_
            if not MIN_PIECE - 1e-9 <= share <= 1 - MIN_PIECE + 1e-9:  # eq. 51, both
                for mode in RESUME_MODES:
                    outside[mode].append(f"BJ {i} split {share:.0%}/{1 - share:.0%}")
    return {
        "bj": float(sd[batch].mean()) if batch.any() else None,
        "rtj": float(sd[rt].mean()) if rt.any() else None,
        "preemptions": int(res["preemptions"].sum()),
        "outside": outside,
    }


def compare(instance: Instance, milp: MilpResult, wcjs: dict,
            options: SolveOptions) -> dict:
    """The "MILP no worse than wcjs" check (module docstring) for the instance's variant."""
    outside = wcjs["outside"][instance.resume]
    out: dict = {"extra_s": 0.0}
    hi = milp.threshold if milp.threshold is not None else THRESHOLD
    w_rtj, w_bj = wcjs["rtj"], wcjs["bj"]
    if w_rtj + EPS >= hi:
        out["rtj_ok"] = True
    elif milp.threshold_lower is not None and w_rtj <= milp.threshold_lower \
            and milp.threshold_proven:
        out["rtj_ok"] = False
    else:  # wcjs's RTJ SD lies inside the search's last bracket: decide it directly
        r = milp_solve_at(instance, w_rtj, options)
        out["extra_s"] += r.solve_seconds
        out["rtj_ok"] = r.feasible
    theta = max(hi, w_rtj)
    if theta <= hi + EPS:
        at = milp
    else:
        at = milp_solve_at(instance, theta, options, start=milp.values)
        out["extra_s"] += at.solve_seconds
    out["theta"] = theta
    out["bj_at_theta"] = at.mean_bj_sd
    out["status_at_theta"] = at.status
    out["bj_ok"] = at.mean_bj_sd is not None and at.mean_bj_sd <= w_bj + EPS
    ok = out["rtj_ok"] and out["bj_ok"]
    if ok:
        out["check"] = "yes"
    elif outside:
        out["check"] = "n/a (wcjs outside the model)"
    elif at.status != "optimal" or not milp.threshold_proven:
        out["check"] = f"? ({at.status})"
    else:
        out["check"] = "NO"
    return out


def any_vs_same(any_inst: Instance, any_res: MilpResult, same: MilpResult,
                options: SolveOptions) -> dict:
    """"any <= same": any's mean BJ SD at same's threshold <= same's mean BJ SD."""
    out: dict = {"extra_s": 0.0}
    at = any_res
    if same.threshold is not None and any_res.threshold is not None \
            and abs(any_res.threshold - same.threshold) > 1e-9:
        # same's schedule is one of any's at same's threshold: solve any there
        at = milp_solve_at(any_inst, same.threshold, options)
        out["extra_s"] = at.solve_seconds
    out["bj"], out["status"] = at.mean_bj_sd, at.status
    if same.mean_bj_sd is None:
        out["check"] = "-"
    elif at.mean_bj_sd is not None and at.mean_bj_sd <= same.mean_bj_sd + EPS:
        out["check"] = "yes" if at.mean_bj_sd >= same.mean_bj_sd - EPS else "better"
    elif at.status != "optimal" or same.status != "optimal":
        out["check"] = f"? ({at.status})"
    else:
        out["check"] = "NO"
    return out


def fmt(x: float | None, digits: int = 3) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def status_cell(r: MilpResult) -> str:
    status = r.status
    if r.gap is not None and status != "optimal":
        status += f" (gap {100 * r.gap:.1f}%)"
    return status


def threshold_cell(r: MilpResult) -> str:
    cell = fmt(r.threshold, 3)
    if r.threshold_lower is not None:
        cell += " (searched)"
    return cell


def at_cell(c: dict) -> str:
    return f"{fmt(c['bj_at_theta'])} at {c['theta']:.3f}" + (
        "" if c["status_at_theta"] == "optimal" else f" ({c['status_at_theta']})")


def row(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--milp-only", action="store_true", help="skip the wcjs simulations")
    ap.add_argument("--markdown", default=None, metavar="FILE", help="also write the table")
    ap.add_argument("--seed", type=int, default=DEFAULT_SEED)
    ap.add_argument("--count", type=int, default=20)
    ap.add_argument("--time-limit", type=float, default=60.0, help="seconds per HiGHS solve")
    ap.add_argument("--logs", default=None, metavar="DIR",
                    help="keep the generated logs here (default: a temporary directory)")
    args = ap.parse_args()
    cluster = parse_cluster("bgq:16")
    options = SolveOptions(time_limit=args.time_limit)
    tmp = None
    if args.logs is None:
        tmp = tempfile.TemporaryDirectory()
        logs = Path(tmp.name)
    else:
        logs = Path(args.logs)
    paths = write_table3(logs, cluster, count=args.count, seed=args.seed)
    if not args.milp_only:
        from schedd.policies import POLICIES

        if "wcjs" not in POLICIES:
            print("error: the wcjs policy is not registered yet; run with --milp-only",
                  file=sys.stderr)
            return 2
    head1 = ["log"]
    for mode in RESUME_MODES:
        head1 += [f"{mode}: BJ SD", "RTJ SD", "threshold", "status", "solve s", "binaries"]
    head1 += ["any: BJs resumed elsewhere", "any BJ SD at same's threshold", "any <= same"]
    head2 = ["log", "wcjs BJ SD", "wcjs RTJ SD", "wcjs preemptions",
             "wcjs outside `same`", "wcjs outside `any`",
             "same: BJ SD at max(thr, wcjs RTJ)", "same no worse than wcjs",
             "any: BJ SD at max(thr, wcjs RTJ)", "any no worse than wcjs"]
    title = (f"Table 3 logs: seed {args.seed}, {args.count} logs of 5 BJs + 2 RTJs on "
             f"bgq:16; MILP threshold {THRESHOLD} with the upward search; HiGHS "
             f"{args.time_limit:g} s per solve, 1 thread")
    table1 = [row(head1), "|---" * len(head1) + "|"]
    table2 = [row(head2), "|---" * len(head2) + "|"]
    print(title + "\n\n" + "\n".join(table1), flush=True)
    acc: dict[str, list[float]] = {}

    def add(key: str, value: float | None) -> None:
        acc.setdefault(key, []).append(float("nan") if value is None else value)

    checks: dict[str, list[str]] = {"any_same": [], "same": [], "any": []}
    rows2: list[str] = []
    started = time.perf_counter()
    for k, path in enumerate(paths):
        jobs = read_jobs(str(path), cluster)
        inst = {mode: make_instance(jobs, cluster, resume=mode) for mode in RESUME_MODES}
        milp = {mode: milp_solve(inst[mode], THRESHOLD, options=options)
                for mode in RESUME_MODES}
        cells = [str(k)]
        for mode in RESUME_MODES:
            r = milp[mode]
            cells += [fmt(r.mean_bj_sd), fmt(r.mean_rtj_sd), threshold_cell(r),
                      status_cell(r), f"{r.solve_seconds:.2f}", str(r.binaries)]
            add(f"{mode}_bj", r.mean_bj_sd)
            add(f"{mode}_rtj", r.mean_rtj_sd)
            add(f"{mode}_s", r.solve_seconds)
            add(f"{mode}_total_s", r.solve_seconds)
            add(f"{mode}_optimal", 1.0 if r.status == "optimal" else 0.0)
        moved = [str(j.id) for j in milp["any"].jobs if len(set(j.blocks)) > 1]
        vs = any_vs_same(inst["any"], milp["any"], milp["same"], options)
        acc["any_total_s"][-1] += vs["extra_s"]
        checks["any_same"].append(vs["check"])
        cells += [", ".join(moved) or "-",
                  fmt(vs["bj"]) + ("" if vs["status"] == "optimal" else f" ({vs['status']})"),
                  vs["check"]]
        table1.append(row(cells))
        print(table1[-1], flush=True)
        if not args.milp_only:
            w = wcjs_slowdowns(path, cluster)
            add("w_bj", w["bj"])
            add("w_rtj", w["rtj"])
            cells2 = [str(k), fmt(w["bj"]), fmt(w["rtj"]), str(w["preemptions"]),
                      "; ".join(w["outside"]["same"]) or "-",
                      "; ".join(w["outside"]["any"]) or "-"]
            for mode in RESUME_MODES:
                c = compare(inst[mode], milp[mode], w, options)
                acc[f"{mode}_total_s"][-1] += c["extra_s"]
                checks[mode].append(c["check"])
                cells2 += [at_cell(c), c["check"]]
            rows2.append(row(cells2))
    mean = ["**mean**"]
    for mode in RESUME_MODES:
        mean += [fmt(float(np.mean(acc[f"{mode}_bj"]))), fmt(float(np.mean(acc[f"{mode}_rtj"]))),
                 "", f"{int(sum(acc[f'{mode}_optimal']))}/{len(paths)} optimal",
                 f"{np.mean(acc[f'{mode}_s']):.2f}", ""]
    ok = sum(c in ("yes", "better") for c in checks["any_same"])
    better = sum(c == "better" for c in checks["any_same"])
    mean += ["", "", f"{ok}/{len(paths)} ({better} better)"]
    table1.append(row(mean))
    print(table1[-1])
    lines = [title, "", "MILP, both resume variants:", "", *table1]
    if not args.milp_only:
        table2 += rows2
        yes = {mode: sum(c == "yes" for c in checks[mode]) for mode in RESUME_MODES}
        table2.append(row(["**mean**", fmt(float(np.mean(acc["w_bj"]))),
                           fmt(float(np.mean(acc["w_rtj"]))), "", "", "",
                           "", f"{yes['same']}/{len(paths)}", "",
                           f"{yes['any']}/{len(paths)}"]))
        lines += ["", "MILP against wcjs (ckpt=jit):", "", *table2]
        print("\n" + "\n".join(table2))
    tail = ["", "Paper (Table 3): " + "; ".join(
        f"{name} BJ SD {bj:.2f}, RTJ SD {rt:.2f}" for name, (bj, rt) in PAPER.items()),
        f"Total wall time {time.perf_counter() - started:.1f} s."]
    for mode in RESUME_MODES:
        secs = acc[f"{mode}_s"]
        tail.append(
            f"MILP `{mode}` solve seconds per log (search included): min {min(secs):.2f}, "
            f"median {float(np.median(secs)):.2f}, max {max(secs):.2f}, sum {sum(secs):.1f}; "
            f"with the comparison solves: sum {sum(acc[f'{mode}_total_s']):.1f}.")
    lines += tail
    print("\n".join(tail))
    if args.markdown:
        Path(args.markdown).write_text("\n".join(lines) + "\n")
        print(f"wrote {args.markdown}")
    if tmp is not None:
        tmp.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
