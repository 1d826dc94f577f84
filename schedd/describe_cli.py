"""`schedd policies` and `schedd cluster`: what a run can use (the policies with their
options, a cluster spec's machine). `add_*_parser(subparsers)` add them, `run_*(args)` run
them."""

from __future__ import annotations

import argparse
from typing import Any


def add_policies_parser(sub: Any) -> argparse.ArgumentParser:
    pol = sub.add_parser("policies", help="list policies with their options and defaults")
    pol.add_argument("--plugin", action="append", default=[], metavar="MODULE",
                     help="also list the policies this module registers; repeatable")
    return pol


def run_policies(args: argparse.Namespace) -> int:
    from .policies import POLICIES, option_help

    for name in sorted(POLICIES):
        cls = POLICIES[name]
        print(f"{name:16} {cls.summary}")
        rows = option_help(cls.Options)
        for opt, typ, default, text in rows:
            print(f"    {opt}={default} ({typ}) {text}")
        if not rows:
            print("    (no options)")
    return 0


def add_cluster_parser(sub: Any) -> argparse.ArgumentParser:
    from .core.cluster_spec import CLUSTER_FORMS

    cl = sub.add_parser("cluster", help="describe a cluster spec")
    cl.add_argument("spec", help=CLUSTER_FORMS)
    return cl


def run_cluster(args: argparse.Namespace) -> int:
    from .core.cluster_spec import parse_cluster

    cluster = parse_cluster(args.spec)
    print(cluster.describe())
    return 0
