"""What the `schedd milp` command line needs without loading the solver: the model's
defaults and its error. (schedd.milp.model imports HiGHS and NumPy; the parser of every
`schedd` command is built on each run, so it must not.)"""

DEFAULT_THRESHOLD = 1.2  # SDRTJ_thresh of Table 3
DEFAULT_TOLERANCE = 0.01
DEFAULT_MIN_FRACTION = 0.1  # eq. 51: each piece of a preempted BJ does >= 10% of its work
RESUME_MODES = ("same", "any")  # where piece 2 of a preempted BJ runs (the paper: same)
DEFAULT_RESUME = "same"
DEFAULT_SEED = 2019  # the seed of the logs in docs/milp.md and experiments/milp_table3.py


class MilpError(ValueError):
    """An instance the model cannot take (one sentence)."""
