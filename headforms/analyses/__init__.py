"""Model-level analyses of per-head tables and spectra (fast: they never read weights).

:mod:`.parity` (Table 2, Figure 12), :mod:`.spectra` (unit spectra, Figures 3-5),
:mod:`.fits` (lobe distribution fits, Figure 6), :mod:`.theorem5` (Figure 10), :mod:`.lobes`
(Observation 5: proportional lobes), :mod:`.theta` (distance to and position along Theta),
:mod:`.observations` (Table 14's statuses, Observation 4: symmetric bias), :mod:`.survey`
(survey tables of many models).
"""
