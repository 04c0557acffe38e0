"""Pure Plotly figure builders: tidy data in (per-head frames, spectra arrays), a ``Figure`` out.

None loads a model or imports Streamlit. One module per figure family: :mod:`.style` (palette,
parity markers, the click payload ``[model, layer, head]``), :mod:`.geometry` (the tetrahedron,
the triangle and Theta), :mod:`.camera` (the 3D views of the tetrahedron), :mod:`.simplex`
(profiles on Delta_3 and symmetric profiles on Delta: Figures 1, 2, 7-9), :mod:`.head` (one
head's spectra and profile), :mod:`.heatmaps` (layer x head grids, Figures 13, 14),
:mod:`.parity` (Table 2, Figure 12), :mod:`.spectra` (Figures 3-5), :mod:`.fits` (Figure 6,
Observations 3 and 6), :mod:`.theorem5` (Figure 10), :mod:`.distributions` (Figure 11),
:mod:`.observations` (the observations without a numbered figure), :mod:`.export` (CSV tables);
heads in motion: :mod:`.animated` (every head along a path, with a slider), :mod:`.curves` (one
head along a path), :mod:`.movement` (arrows from model A to B, distances, the heads that moved
most).
"""
