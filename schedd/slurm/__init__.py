"""Slurm and PBS: reading their logs and configuration, and Slurm's scheduling as a policy.

`conf` reads a slurm.conf, `assoc` the association tree, `jobs` what the policy knows of a
job beyond its size, `select` Slurm's node choice and will-run test, `priority` and
`fairshare` its priorities, `policy` the `slurm` policy (the main scheduler, backfill and
their timing), `machine` the machine and jobs a slurm.conf makes of a trace. This package
sits above core/ and policies/ and imports from them, never the other way round.
"""
