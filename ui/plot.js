// The clickable plot component of the dashboard (ui/plot.py): loads plotly.js from the app's
// static files, draws a figure (with its animation frames, if any), sends clicks on head markers
// back to Python, lists the heads under the pointer when markers overlap, and adds SVG/PNG
// downloads to the toolbar.
// Linted by eslint (eslint.config.mjs, `make lint`).

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

// Fit a title to the plot's width (plotly.js neither wraps nor shrinks titles): shrink it, but
// never below a legible size (11 px for every line; <sup> lines are drawn at 70 %, so 16 px for a
// title with them), then wrap each line that still overflows at a space, adding the height the
// new lines take to the top margin.
const MIN_TEXT_PX = 11;
const SUP_SCALE = 0.7;
const LINE_PX = { normal: 24, sup: 15 }; // as ui/plot.py's clear_of_the_toolbar counts them

// The title's lines with whether each is (inside) a <sup> span: a span may cross <br>s.
function titleLines(text) {
  let inSup = false;
  return String(text)
    .split(/<br\s*\/?>/i)
    .map((line) => {
      const sup = inSup || /<sup>/i.test(line);
      if (/<sup>/i.test(line)) inSup = true;
      if (/<\/sup>/i.test(line)) inSup = false;
      return { plain: line.replace(/<[^>]+>/g, ""), raw: line, sup };
    });
}

// Words of `line` in as few lines as fit `available` px at `size` px (a word longer than that
// gets a line of its own).
function wrapWords(context, line, size, family, available) {
  context.font = (line.sup ? size * SUP_SCALE : size) + "px " + family;
  const out = [];
  let current = "";
  for (const word of line.plain.split(" ")) {
    const next = current ? current + " " + word : word;
    if (current && context.measureText(next).width > available) {
      out.push(current);
      current = word;
    } else {
      current = next;
    }
  }
  out.push(current);
  return out;
}

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
  const lines = titleLines(title.text);
  let needed = 0;
  for (const line of lines) {
    needed = Math.max(needed, context.measureText(line.plain).width * (line.sup ? SUP_SCALE : 1));
  }
  const available = width * 0.94 - 12;
  if (needed <= available) return;
  const floor = Math.ceil(MIN_TEXT_PX / (lines.some((line) => line.sup) ? SUP_SCALE : 1));
  const fitted = Math.max(floor, Math.min(size, Math.floor((size * available) / needed)));
  title.font = Object.assign({}, title.font, { size: fitted });
  let added = 0;
  const text = lines.map((line) => {
    const pieces = wrapWords(context, line, fitted, family, available);
    if (pieces.length === 1) return line.raw;
    added += (pieces.length - 1) * (line.sup ? LINE_PX.sup : LINE_PX.normal);
    const bold = /<b>/i.test(line.raw);
    return pieces
      .map((piece) => (bold ? "<b>" + piece + "</b>" : piece))
      .map((piece) => (line.sup ? "<sup>" + piece + "</sup>" : piece))
      .join("<br>");
  });
  if (added) {
    title.text = text.join("<br>");
    const margin = figure.layout.margin || (figure.layout.margin = {});
    margin.t = (margin.t || 80) + added;
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

// Image downloads: a figure whose every trace is drawn as SVG (data.vector, decided in Python)
// exports as vector SVG and as PNG; one with a WebGL scene or a raster trace would be a picture
// inside an SVG, so it offers a high-resolution PNG instead, labelled as such.
function exportButtons(Plotly, filename, vector, pngScale) {
  const buttons = vector
    ? [
        ["svg", Plotly.Icons.disk, "Download SVG (vector)", 1],
        ["png", Plotly.Icons.camera, "Download PNG", 2],
      ]
    : [["png", Plotly.Icons.camera, `Download PNG (high resolution, ${pngScale}×)`, pngScale]];
  return buttons.map(([format, icon, title, scale]) => ({
    name: "download-" + format,
    title,
    icon,
    click: (gd) => Plotly.downloadImage(gd, { format, filename, scale }),
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
    modeBarButtonsToAdd: exportButtons(Plotly, data.filename, data.vector, data.png_scale),
  };
  const frames = figure.frames || [];
  await Plotly.react(gd, { data: figure.data, layout: figure.layout, config, frames });
  performance.mark("hf:drawn:" + data.key); // for benchmarks/bench_first_paint.py
  if (!gd.hfBound) {
    gd.hfBound = true;
    gd.on("plotly_click", (event) => onPlotClick(wrap, gd, event));
    // The point of an animated figure shown now (slider or Play), kept across reruns.
    gd.on("plotly_animatingframe", (event) => {
      gd.hfFrame = { axis: gd.hfAxis, name: event.name };
    });
  }
  await keepFrame(gd, Plotly, figure, frames);
}

// An animated figure (figures/motion.py: one frame per point of a path, named by its value)
// drawn again by a rerun shows the point the visitor had moved to, not its first point again.
async function keepFrame(gd, Plotly, figure, frames) {
  const meta = (figure.layout && figure.layout.meta) || {};
  const previous = gd.hfFrame;
  gd.hfAxis = meta.axis;
  if (!previous || !frames.length || previous.axis !== meta.axis) return;
  if (!frames.some((frame) => frame.name === previous.name)) return;
  await Plotly.animate(gd, [previous.name], {
    mode: "immediate",
    frame: { duration: 0, redraw: true },
    transition: { duration: 0 },
  });
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
  gd.setAttribute(data.attribute, data.key);
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
