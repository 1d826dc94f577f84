"""Slurm and PBS: reading their logs and configuration, and Slurm's scheduling as a policy;
sits above core/ and policies/.

`schedd.slurm.importers` turns sacct output, Slurm's jobcomp/filetxt log and PBS/Torque
accounting logs into traces (docs/import.md). Modules here may import from schedd.core,
schedd.policies, schedd.traces and schedd.limits, never from the command-line front ends or
the daemon.
"""
