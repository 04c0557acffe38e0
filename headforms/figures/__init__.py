"""Pure Plotly figure builders: tidy data in (per-head frames, spectra arrays), a ``Figure`` out.

None loads a model or imports Streamlit. Modules: :mod:`.style` (palette, parity markers, the
click payload ``[model, layer, head]``), :mod:`.simplex` (Delta_3 and the triangle Delta),
:mod:`.head` (one head's spectra and profile), :mod:`.heatmaps` (layer x head views),
:mod:`.paper` (the paper's spectral views, fits, Theorem 5, comparisons).
"""
