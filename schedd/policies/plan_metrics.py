"""The plan cost metrics of plan-based scheduling (PLAN 1/2/3) as the integer codes the
compiled kernel switches on. A module of its own so that both the policy and the kernel
take them from below: the policy must not import the kernel at load time (listing
policies would load numba), and the kernel must not reach back up into the policy."""

METRICS = {"wait": 0, "wait2": 1, "util": 2}
METRIC_WAIT = METRICS["wait"]  # PLAN 1: sum of waits (the mean times n)
METRIC_WAIT2 = METRICS["wait2"]  # PLAN 2: sum of squared waits
METRIC_MAKESPAN = METRICS["util"]  # PLAN 3: latest planned end (max utilisation = min it)
