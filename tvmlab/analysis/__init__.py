"""Analyses of a schedule that explain it: why bounds are what they are, who writes which element,
which cache lines each loop touches, and where a kernel sits on the roofline; and ``gpusim``, which runs
GPU kernels thread by thread on the CPU to find races, divergent barriers and bad accesses.

Plain Python (no widgets): usable from scripts and tests; the explorer draws them.
"""
