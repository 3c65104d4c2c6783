"""Analyses of a schedule that explain it: why bounds are what they are, who writes which element,
which cache lines each loop touches, and where a kernel sits on the roofline.

Plain Python (no widgets): usable from scripts and tests; the explorer draws them.
"""
