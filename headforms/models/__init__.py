"""Model knowledge: configs, RoPE, per-layer Q/K extraction and opening a model (the
architecture table itself is :mod:`headforms.architectures`).

:mod:`.configs` (config objects from config.json or GGUF metadata), :mod:`.rope` (the
rotation R_d of a head at relative position d), :mod:`.extract` (one layer's tensors -> the
factors of its heads' forms), :mod:`.source` (a located model opened for reading).
"""
