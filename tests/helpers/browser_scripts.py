"""JavaScript the browser tests evaluate in the page (tests/system/browser/test_browser.py): where
the simplex's markers and the heatmap's cells are drawn, and what a page has drawn."""

from __future__ import annotations

MARKER_PROBES_JS = """
(gd) => {
  // Each head trace of the 3D scene (and the selection ring), as plotly.js resolved it on the
  // first draw: its index, role, parity, first point and marker size (a per-point size array
  // stays an array, of its first size).
  return gd._fullData
    .map((t, i) => [t, i])
    .filter(([t]) => t.meta && ["heads", "selected"].includes(t.meta.role))
    .map(([t, i]) => ({
      index: i, role: t.meta.role, parity: t.meta.parity || null,
      x: t.x[0], y: t.y[0], z: t.z[0],
      size: typeof t.marker.size === "number" ? t.marker.size : [t.marker.size[0]],
    }));
}
"""

ONE_MARKER_JS = """
async (gd, probe) => {
  // Show only `probe`'s trace (from MARKER_PROBES_JS), reduced to its first point with the
  // marker size plotly.js resolved for it, in black; hide every other trace and the
  // annotations: the plot then shows one marker exactly as that trace draws its markers. Every
  // value set is the probe's own, so the traces shown before leave nothing behind.
  const Plotly = gd.hfPlotly;
  const others = gd.data.map((_, i) => i).filter((i) => i !== probe.index);
  await Plotly.restyle(gd, { visible: false }, others);
  await Plotly.restyle(
    gd,
    { x: [[probe.x]], y: [[probe.y]], z: [[probe.z]], "marker.size": [probe.size],
      "marker.color": "#000000", "marker.opacity": 1, visible: true },
    [probe.index],
  );
  await Plotly.relayout(gd, { "scene.annotations": [] });
  return gd._fullLayout._size.t;
}
"""

CELL_POINTS_JS = """
(gd) => {
  // Screen position of every cell of the trained-heads panel (first trace) of a heatmap.
  const full = gd._fullLayout;
  const trace = gd._fullData.find((t) => t.meta && t.meta.role === "cells");
  const xa = full[trace.xaxis.replace("x", "xaxis")], ya = full[trace.yaxis.replace("y", "yaxis")];
  const rect = gd.getBoundingClientRect();
  const points = [];
  for (let i = 0; i < trace.x.length; i++) {
    points.push({
      x: rect.left + xa._offset + xa.l2p(trace.x[i]),
      y: rect.top + ya._offset + ya.l2p(trace.y[i]),
      layer: trace.customdata[i][1],
      head: trace.customdata[i][2],
    });
  }
  return points;
}
"""

SCENE_VIEW_JS = """
(gd) => Array.from(gd._fullLayout.scene._scene.glplot.cameraParams.view)
"""

PAGE_STATE_JS = """
() => {
  // How many figure components the page drew (Streamlit's bidi components: each holds one
  // plot) and how many of them have drawn their text.
  const components = [...document.querySelectorAll('[data-testid^="stBidiComponent"]')];
  return {
    components: components.length,
    drawn: components.filter((c) => c.querySelector("div[data-hf-plot] .main-svg text")).length,
  };
}
"""

SMALLEST_TEXT_JS = """
() => {
  // Every piece of text plotly.js draws in SVG (titles, ticks, legends, annotations, bar
  // labels, <sup> lines), at the size it appears on screen: its font size times the scale of
  // its transforms (plotly.js shrinks bar labels by a transform). Invisible text is left out.
  const sizes = [];
  for (const div of document.querySelectorAll("div[data-hf-plot]")) {
    for (const el of div.querySelectorAll("svg text, svg tspan")) {
      const own = [...el.childNodes].some((n) => n.nodeType === 3 && n.textContent.trim());
      if (!own) continue;
      const style = getComputedStyle(el);
      const hidden =
        style.display === "none" || style.visibility === "hidden" ||
        parseFloat(style.opacity) === 0 || parseFloat(style.fillOpacity) === 0 ||
        /rgba\\(.*,\\s*0\\)$/.test(style.fill);
      const box = el.getBoundingClientRect();
      if (hidden || !box.width || !box.height) continue;
      const m = el.getScreenCTM();
      const scale = m ? Math.sqrt(Math.abs(m.a * m.d - m.b * m.c)) : 1;
      const text = el.textContent.slice(0, 40);
      sizes.push([parseFloat(style.fontSize) * scale, div.dataset.hfPlot, text]);
    }
  }
  return sizes;
}
"""
