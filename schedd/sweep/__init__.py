"""Parameter sweeps: cells keyed by content hash, cached on disk, run on dask.distributed."""
