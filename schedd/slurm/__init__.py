"""Slurm and PBS: reading their logs and configuration, and Slurm's scheduling as a policy.

`importers` turns sacct output, Slurm's jobcomp/filetxt log and PBS/Torque accounting logs
into traces (docs/import.md). `conf` reads a slurm.conf, `assoc` the association tree,
`jobs` what the policy knows of a job beyond its size, `select` Slurm's node choice and
will-run test, `priority` and `fairshare` its priorities, `policy` the `slurm` policy (the
main scheduler, backfill and their timing), `machine` the machine and jobs a slurm.conf
makes of a trace (docs/slurm.md). This package sits above core/ and policies/: it may
import from schedd.core, schedd.policies, schedd.traces and schedd.limits, never from the
command-line front ends or the daemon.
"""
