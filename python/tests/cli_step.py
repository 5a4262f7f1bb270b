"""A step for `python -m spmdsim compile` in test_cli.py: make_step(target) -> (jitted, args)."""

from programs import plain_scan


def make_step(target, batch_per_device=4):
    return plain_scan(target, batch_per_device=batch_per_device)
