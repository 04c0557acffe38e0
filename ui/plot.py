"""Every Plotly figure of the dashboard: one ``st.components.v2`` component that draws it, sends
clicks back to Python, resolves overlapping markers, exports SVG/PNG, plus a CSV download.

``st.plotly_chart(on_select=...)`` reports nothing for 3D scatters and its toolbar offers one
image format, so figures go through this small component instead: it loads plotly.js from the
app's static files (:mod:`ui.static`: the gl3d bundle when every trace is scatter/scatter3d,
else the full bundle), draws with ``Plotly.react`` (``layout.uirevision`` keeps the camera across
reruns) and:

* on a click, finds every clickable marker drawn within :data:`PICK_RADIUS_PX` of the pointer
  (3D: through the scene camera's projection, 2D: through the axes). One: its ``customdata``
  (``[model, layer, head]``) is sent with ``setTriggerValue('clicked', ...)``. Several: a small
  list of those heads (``meta.choices`` of their trace: name, parity, profile) opens at the
  pointer, and the chosen one is sent;
* adds "Download SVG" and "Download PNG" buttons to the plot's toolbar (``Plotly.downloadImage``,
  in the browser: no server-side image export), and keeps titles clear of that toolbar, shrinking
  a title that would not fit the plot's width.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from headforms.figures.export import figure_table

from .static import GL3D_TRACE_TYPES, ensure_plotly_js

COMPONENT_NAME = "headforms.plot"
PLOT_ATTRIBUTE = "data-hf-plot"
"""HTML attribute carrying the plot's key (``div[data-hf-plot="simplex"]``), for tests."""

DEFAULT_HEIGHT = 450
PICK_RADIUS_PX = 6
"""Markers whose centres are this close to the pointer count as "under" it (marker radius + a
little); more than one opens the chooser."""

TOOLBAR_BAND_PX = 30
"""Height kept free above a title for the plot's toolbar (modebar), which sits top right."""

_JS = r"""
const REGISTRY = "__headformsPlotly";

function registry() {
  if (!window[REGISTRY]) window[REGISTRY] = { chain: Promise.resolve(), bundles: {} };
  return window[REGISTRY];
}

// Bundles load one after the other: each defines window.Plotly while it runs, and its
// instance is taken right after, so the gl3d and the full bundle can live side by side.
function loadBundle(src) {
  const reg = registry();
  if (!reg.bundles[src]) {
    const loading = reg.chain.then(
      () =>
        new Promise((resolve, reject) => {
          const script = document.createElement("script");
          script.src = src;
          script.async = true;
          script.onload = () => resolve(window.Plotly);
          script.onerror = () => reject(new Error("could not load plotly.js from " + src));
          document.head.appendChild(script);
        })
    );
    reg.bundles[src] = loading;
    reg.chain = loading.catch(() => {
      delete reg.bundles[src];
    });
  }
  return reg.bundles[src];
}

// The bundle for a figure, chosen as soon as it mounts (so the download, and V8's compiling of
// it off the main thread, start at once): the full bundle if it is already there or this figure
// needs it (bars, histograms), else the gl3d bundle. A page whose first plots fit the gl3d
// bundle and whose later ones do not loads both, once per browser tab.
function chooseBundle(figure, plotly) {
  const light = new Set(plotly.gl3d_types);
  const fits = figure.data.every((trace) => light.has(trace.type || "scatter"));
  if (!plotly.gl3d || !fits || registry().bundles[plotly.full]) return plotly.full;
  return plotly.gl3d;
}

// Shrink a title whose longest line would overflow the plot (plotly.js does not wrap).
function fitTitle(figure, width) {
  const title = figure.layout && figure.layout.title;
  if (!title || !title.text || !width) return;
  const template = (figure.layout.template && figure.layout.template.layout) || {};
  const font = Object.assign({}, (template.title || {}).font, title.font);
  const family = font.family || (template.font || {}).family || "Open Sans, verdana, arial";
  const size = font.size || 17;
  const canvas = fitTitle.canvas || (fitTitle.canvas = document.createElement("canvas"));
  const context = canvas.getContext("2d");
  context.font = size + "px " + family;
  let needed = 0;
  for (const line of String(title.text).split(/<br\s*\/?>/i)) {
    const small = /<sup>/i.test(line) ? 0.7 : 1;
    const plain = line.replace(/<[^>]+>/g, "");
    needed = Math.max(needed, context.measureText(plain).width * small);
  }
  const available = width * 0.94 - 12;
  if (needed > available) {
    const fitted = Math.max(9, Math.floor((size * available) / needed));
    title.font = Object.assign({}, title.font, { size: fitted });
  }
}

function project3d(gd, trace) {
  const full = gd._fullLayout;
  const sceneLayout = full[trace.scene || "scene"];
  const scene = sceneLayout && sceneLayout._scene;
  if (!scene || !scene.glplot) return null;
  const cam = scene.glplot.cameraParams;
  const scale = scene.dataScale;
  const size = full._size;
  const dom = sceneLayout.domain;
  const mul = (m, v) =>
    [0, 1, 2, 3].map((r) => m[r] * v[0] + m[4 + r] * v[1] + m[8 + r] * v[2] + m[12 + r] * v[3]);
  const left = size.l + dom.x[0] * size.w, width = (dom.x[1] - dom.x[0]) * size.w;
  const top = size.t + (1 - dom.y[1]) * size.h, height = (dom.y[1] - dom.y[0]) * size.h;
  return (i) => {
    const world = [trace.x[i] * scale[0], trace.y[i] * scale[1], trace.z[i] * scale[2], 1];
    const clip = mul(cam.projection, mul(cam.view, mul(cam.model, world)));
    if (clip[3] <= 0) return null; // behind the camera
    return [
      left + ((clip[0] / clip[3] + 1) / 2) * width,
      top + ((1 - clip[1] / clip[3]) / 2) * height,
    ];
  };
}

function project2d(gd, trace) {
  const full = gd._fullLayout;
  const xa = full[(trace.xaxis || "x").replace("x", "xaxis")];
  const ya = full[(trace.yaxis || "y").replace("y", "yaxis")];
  if (!xa || !ya) return null;
  return (i) => [xa._offset + xa.c2p(trace.x[i]), ya._offset + ya.c2p(trace.y[i])];
}

// Clickable markers (traces with customdata, except the selection ring) within `radius`
// pixels of the pointer, nearest first, one entry per head.
function markersNear(gd, at, radius) {
  const rect = gd.getBoundingClientRect();
  const found = new Map();
  for (const trace of gd._fullData || []) {
    if (trace.visible !== true || !trace.customdata) continue;
    if (trace.meta && trace.meta.role === "selected") continue;
    if (!/markers/.test(trace.mode || "markers")) continue;
    const project = trace.type === "scatter3d" ? project3d(gd, trace) : project2d(gd, trace);
    if (!project) continue;
    const choices = (trace.meta && trace.meta.choices) || [];
    for (let i = 0; i < trace.customdata.length; i++) {
      const xy = project(i);
      if (!xy || !isFinite(xy[0]) || !isFinite(xy[1])) continue;
      const distance = Math.hypot(rect.left + xy[0] - at.x, rect.top + xy[1] - at.y);
      if (distance > radius) continue;
      const customdata = Array.from(trace.customdata[i]);
      const id = JSON.stringify(customdata);
      const label = choices[i] || customdata.join(" · ");
      if (!found.has(id) || found.get(id).distance > distance) {
        found.set(id, { customdata, label, distance });
      }
    }
  }
  return Array.from(found.values()).sort((a, b) => a.distance - b.distance);
}

function hideChooser(wrap) {
  const old = wrap.querySelector(".hf-chooser");
  if (old) old.remove();
  if (wrap.hfDismiss) {
    document.removeEventListener("pointerdown", wrap.hfDismiss, true);
    document.removeEventListener("keydown", wrap.hfDismiss, true);
    wrap.hfDismiss = null;
  }
}

function showChooser(wrap, near, at) {
  hideChooser(wrap);
  const box = document.createElement("div");
  box.className = "hf-chooser";
  box.setAttribute("role", "listbox");
  const header = document.createElement("div");
  header.className = "hf-chooser-header";
  header.textContent = near.length + " heads under the pointer: choose one";
  const close = document.createElement("button");
  close.type = "button";
  close.className = "hf-chooser-close";
  close.setAttribute("aria-label", "close");
  close.textContent = "×";
  close.onclick = () => hideChooser(wrap);
  header.appendChild(close);
  box.appendChild(header);
  for (const item of near) {
    const button = document.createElement("button");
    button.type = "button";
    button.className = "hf-choice";
    button.setAttribute("role", "option");
    button.dataset.hfHead = item.customdata.slice(1, 3).join(",");
    button.dataset.hfModel = String(item.customdata[0]);
    button.textContent = item.label;
    button.onclick = () => {
      hideChooser(wrap);
      wrap.hfSend("clicked", item.customdata);
    };
    box.appendChild(button);
  }
  wrap.appendChild(box);
  const rect = wrap.getBoundingClientRect();
  const left = Math.min(at.x - rect.left + 12, rect.width - box.offsetWidth - 4);
  const top = Math.min(at.y - rect.top + 12, rect.height - box.offsetHeight - 4);
  box.style.left = Math.max(4, left) + "px";
  box.style.top = Math.max(4, top) + "px";
  wrap.hfDismiss = (event) => {
    if (event.type === "keydown" ? event.key === "Escape" : !box.contains(event.target)) {
      hideChooser(wrap);
    }
  };
  document.addEventListener("pointerdown", wrap.hfDismiss, true);
  document.addEventListener("keydown", wrap.hfDismiss, true);
}

function onPlotClick(wrap, gd, event) {
  const point = event && event.points && event.points[0];
  if (!point) return;
  const near = gd.hfPointer ? markersNear(gd, gd.hfPointer, wrap.hfData.pick_radius) : [];
  if (near.length > 1) {
    if (gd.hfPlotly) gd.hfPlotly.Fx.unhover(gd); // the hover label would cover the list
    showChooser(wrap, near, gd.hfPointer);
    return;
  }
  const chosen = near.length === 1 ? near[0].customdata : point.customdata;
  if (chosen === undefined || chosen === null) return;
  hideChooser(wrap);
  wrap.hfSend("clicked", Array.from(chosen));
}

function exportButtons(Plotly, filename) {
  return [
    ["svg", Plotly.Icons.disk],
    ["png", Plotly.Icons.camera],
  ].map(([format, icon]) => ({
    name: "download-" + format,
    title: "Download " + format.toUpperCase(),
    icon: icon,
    click: (gd) => Plotly.downloadImage(gd, { format, filename, scale: format === "png" ? 2 : 1 }),
  }));
}

// The next animation frame, or 50 ms at most (frames stop in hidden tabs; a draw must not wait
// for the tab to be shown).
function nextFrame() {
  return new Promise((resolve) => {
    let done = false;
    const go = () => {
      if (!done) {
        done = true;
        resolve();
      }
    };
    requestAnimationFrame(go);
    setTimeout(go, 50);
  });
}

// Plots are drawn one at a time with a frame in between, 3D scenes first, then in the order
// they mounted: the 3D simplex is on screen before the triangle beside it starts drawing.
function inTurn(task, priority) {
  const reg = registry();
  if (!reg.queue) reg.queue = [];
  return new Promise((resolve, reject) => {
    reg.queue.push({ task, priority, order: reg.queue.length, resolve, reject });
    if (reg.queue.length === 1 && !reg.drawing) drainQueue();
  });
}

async function drainQueue() {
  const reg = registry();
  reg.drawing = true;
  while (reg.queue.length) {
    await nextFrame();
    reg.queue.sort((a, b) => b.priority - a.priority || a.order - b.order);
    const next = reg.queue.shift();
    const run = Promise.resolve().then(next.task).then(next.resolve, next.reject);
    // a draw that never settles must not hold the others back for more than 10 s
    await Promise.race([run, new Promise((resolve) => setTimeout(resolve, 10000))]);
  }
  reg.drawing = false;
}

async function draw(wrap, gd, Plotly, figure, data) {
  if (gd.hfPlotly && gd.hfPlotly !== Plotly) {
    gd.hfPlotly.purge(gd);
    gd.hfBound = false;
  }
  gd.hfPlotly = Plotly;
  fitTitle(figure, gd.clientWidth);
  const config = {
    displaylogo: false,
    responsive: true,
    scrollZoom: data.scroll_zoom,
    showSendToCloud: false,
    modeBarButtonsToRemove: [
      "toImage", "sendDataToCloud", "sendChartToCloud", "select2d", "lasso2d",
    ],
    modeBarButtonsToAdd: exportButtons(Plotly, data.filename),
  };
  await Plotly.react(gd, figure.data, figure.layout, config);
  performance.mark("hf:drawn:" + data.key); // for benchmarks/bench_first_paint.py
  if (!gd.hfBound) {
    gd.hfBound = true;
    gd.on("plotly_click", (event) => onPlotClick(wrap, gd, event));
  }
}

export default function ({ data, parentElement, setTriggerValue }) {
  let wrap = parentElement.querySelector("div.hf-plot-wrap");
  if (!wrap) {
    wrap = document.createElement("div");
    wrap.className = "hf-plot-wrap";
    const plot = document.createElement("div");
    plot.className = "hf-plot";
    const remember = (e) => (plot.hfPointer = { x: e.clientX, y: e.clientY });
    plot.addEventListener("pointerdown", remember, true);
    wrap.appendChild(plot);
    parentElement.appendChild(wrap);
  }
  const gd = wrap.querySelector("div.hf-plot");
  gd.setAttribute("__PLOT_ATTRIBUTE__", data.key);
  gd.style.height = data.height + "px";
  wrap.hfSend = setTriggerValue;
  wrap.hfData = data;
  performance.mark("hf:mount:" + data.key);
  const figure = JSON.parse(data.figure);
  const threeD = figure.data.some((trace) => trace.type === "scatter3d") ? 1 : 0;
  loadBundle(chooseBundle(figure, data.plotly))
    .then((Plotly) => {
      performance.mark("hf:plotly:" + data.key);
      return inTurn(() => draw(wrap, gd, Plotly, figure, data), threeD);
    })
    .catch((error) => {
      gd.textContent = String(error);
    });
  return () => {
    // Called on unmount (and possibly before a re-render): purge only if really detached.
    setTimeout(() => {
      if (!gd.isConnected && gd.hfPlotly) gd.hfPlotly.purge(gd);
    }, 0);
  };
}
"""

_CSS = """
div.hf-plot-wrap { position: relative; width: 100%; }
div.hf-plot { width: 100%; }
div.hf-chooser {
  position: absolute; z-index: 1000; max-height: 280px; overflow-y: auto; min-width: 240px;
  background: white; border: 1px solid #bbb; border-radius: 6px;
  box-shadow: 0 4px 14px rgba(0,0,0,0.18); font: 13px/1.3 sans-serif; padding: 4px 0;
}
div.hf-chooser-header {
  display: flex; justify-content: space-between; align-items: center; gap: 8px;
  padding: 2px 8px 4px; color: #555; font-size: 12px; border-bottom: 1px solid #eee;
}
button.hf-chooser-close { border: none; background: none; font-size: 16px; cursor: pointer; }
button.hf-choice {
  display: block; width: 100%; text-align: left; border: none; background: none;
  padding: 4px 10px; cursor: pointer; font: inherit; white-space: nowrap;
}
button.hf-choice:hover, button.hf-choice:focus { background: #eaf1f8; }
"""

_component = st.components.v2.component(
    COMPONENT_NAME,
    js=_JS.replace("__PLOT_ATTRIBUTE__", PLOT_ATTRIBUTE),
    css=_CSS,
    isolate_styles=False,
)


def url_path(path: str) -> str:
    """``/<path>`` below the server's ``server.baseUrlPath``."""
    base = str(st.get_option("server.baseUrlPath") or "").strip("/")
    return f"/{base}/{path}" if base else f"/{path}"


def clear_of_the_toolbar(fig: go.Figure) -> go.Figure:
    """Put the title below the band of the plot's toolbar (top right, shown on hover) and make
    the top margin tall enough for it, so neither covers the other nor the plot."""
    text = str(fig.layout.title.text or "")
    if text:
        lines = re.split(r"<br\s*/?>", text)
        small = sum(1 for line in lines[1:] if "<sup>" in line)
        needed = TOOLBAR_BAND_PX + 24 * (len(lines) - small) + 15 * small + 12
        fig.update_layout(
            title={"yref": "container", "y": 1, "yanchor": "top", "pad": {"t": TOOLBAR_BAND_PX}},
            margin_t=max(fig.layout.margin.t or 0, needed),
        )
    return fig


@dataclass(frozen=True)
class PlotPayload:
    """A figure serialised for the component (cache this rather than the Figure)."""

    json: str
    height: int
    title: str = ""

    @classmethod
    def of(cls, figure: go.Figure) -> PlotPayload:
        """Serialise ``figure`` (``to_json``; numpy arrays become typed arrays)."""
        cached = getattr(figure, "_hf_payload", None)
        if cached is not None:  # a cached figure shown again: serialise it once
            return cached
        clear_of_the_toolbar(figure)
        first_line = re.split(r"<br\s*/?>", str(figure.layout.title.text or ""))[0]
        title = re.sub(r"<[^>]+>", "", first_line).strip()
        payload = cls(figure.to_json(), int(figure.layout.height or DEFAULT_HEIGHT), title)
        figure._hf_payload = payload
        return payload

    def table(self) -> pd.DataFrame:
        """The figure's data points (:func:`headforms.figures.export.figure_table`)."""
        return figure_table(go.Figure(json.loads(self.json)))


TableSource = pd.DataFrame | Callable[[], pd.DataFrame] | None


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("_")[:80] or "figure"


def clickable_plot(
    figure: go.Figure | PlotPayload,
    key: str,
    on_click: Callable[[Sequence[Any]], None] | None = None,
    height: int | None = None,
    caption: str | None = None,
    data: TableSource = None,
    filename: str | None = None,
    scroll_zoom: bool = False,
) -> None:
    """Draw ``figure``; a click on a point with customdata calls ``on_click(customdata)``.

    ``key`` identifies the plot (session state, and ``div[data-hf-plot=key]`` in the page).
    ``on_click`` runs as a widget callback before the next script run, so it may change any
    session state (e.g. :func:`ui.state.select_from_customdata`). ``height`` (px) defaults to
    the figure's ``layout.height``. Below the plot: ``caption`` and a CSV download of ``data``
    (a table or a function returning one; default: the figure's points, see
    :meth:`PlotPayload.table`), named ``filename`` (default: the key). ``scroll_zoom``: the
    mouse wheel zooms the plot (else it scrolls the page).
    """
    assets = ensure_plotly_js()
    payload = figure if isinstance(figure, PlotPayload) else PlotPayload.of(figure)
    height = height or payload.height
    stem = _slug(filename or key)

    def clicked() -> None:
        state = st.session_state.get(key)  # absent when a forged message sends only the trigger
        value = state.get("clicked") if hasattr(state, "get") else None
        if on_click is not None and value is not None:
            on_click(value)

    _component(
        key=key,
        data={
            "figure": payload.json,
            "key": key,
            "height": height,
            "filename": stem,
            "scroll_zoom": bool(scroll_zoom),
            "pick_radius": PICK_RADIUS_PX,
            "plotly": {
                "full": url_path(assets.full),
                "gl3d": url_path(assets.gl3d) if assets.gl3d else None,
                "gl3d_types": list(GL3D_TRACE_TYPES),
            },
        },
        height=height,
        on_clicked_change=clicked,
    )

    def csv() -> str:
        table = data() if callable(data) else data
        return (table if table is not None else payload.table()).to_csv(index=False)

    below = st.container(horizontal=True, vertical_alignment="top", gap="small")
    if caption:
        below.caption(caption)
    below.download_button(
        "CSV",
        data=csv,
        file_name=f"{stem}.csv",
        mime="text/csv",
        key=f"{key}__csv",
        icon=":material/download:",
        type="tertiary",
        on_click="ignore",
        help="The data of this figure as a CSV table. Images: the toolbar's SVG and PNG buttons.",
    )


def figure_key(fig: go.Figure | PlotPayload, caption: str) -> str:
    """A stable key for a figure shown without one (its title and caption)."""
    title = fig.title if isinstance(fig, PlotPayload) else str(fig.layout.title.text or "")
    return "fig-" + hashlib.sha1(f"{title}\n{caption}".encode()).hexdigest()[:12]
