"""Model knowledge: the architecture table, RoPE, and per-layer Q/K extraction.

:mod:`.architectures` (where each family keeps Q/K and how to split it), :mod:`.rope` (the
rotation R_d of a head at relative position d), :mod:`.extract` (one layer's tensors -> the
factors of its heads' forms).
"""
