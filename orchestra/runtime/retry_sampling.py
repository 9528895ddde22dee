"""Sampling that changes when a model's output keeps failing.

A small model asked the same question at its default sampling often gives the same
reply, byte for byte: seen with Qwen2.5-Coder-0.5B, whose three attempts of one task
each began with the identical failing tool call, so the attempts and the output
retries bought nothing. After a failure the request therefore changes its sampling,
not only its prompt: a warmer temperature and a different seed for every
(retry, unusable turn) pair, so another try is another sample. A role that set its
own temperature keeps it until the first failure; the ladder only ever raises it.
"""

from __future__ import annotations

import dataclasses
import zlib

from orchestra.models.base import ModelSettings

__all__ = ["retry_settings"]

LADDER = (0.4, 0.7, 0.9, 1.0)
"""Temperatures for the 1st, 2nd, 3rd, later tries after a failure."""
SAMPLE_TEMPERATURE = 0.7
"""The least temperature of a new sample a check asked for (best of N needs 0.6-0.8;
seen: a 1.5B coder asked afresh at 0.4 gave its greedy answer again, byte for byte)."""


def retry_settings(base: ModelSettings, *, task_id: str, retries: int,
                   failures: int, sample: bool = False) -> ModelSettings:
    """``base`` on a first, clean try; warmer and reseeded after failures.

    ``retries`` counts the task's failed attempts, ``failures`` the unusable turns in
    a row within this attempt. Seeds derive from the task id, so a replay or another
    worker asks with the same settings (kept deterministic for servers that honour
    a seed), while two different tries never share one. ``sample``: the check asked for
    a new sample (the task afresh), which is only worth its cost if it differs.
    """
    tries = retries + failures
    if tries <= 0:
        return base
    step = LADDER[min(tries, len(LADDER)) - 1]
    if sample:
        step = max(step, SAMPLE_TEMPERATURE)
    temperature = step if base.temperature is None else max(base.temperature, step)
    seed = zlib.crc32(f"{task_id}:{retries}:{failures}".encode()) + (base.seed or 0)
    # a sampled reply has no one answer to reproduce: the prompt cache may serve it
    return dataclasses.replace(base, temperature=temperature, seed=seed % 2**31,
                               prompt_cache=None)
