// The clickable plot component of the dashboard (ui/plot.py): loads plotly.js from the app's
// static files, draws a figure (with its animation frames, if any), sends clicks on head markers
// back to Python, lists the heads under the pointer when markers overlap, and adds SVG/PNG
// downloads to the toolbar.
// Linted by eslint (eslint.config.mjs, `make lint`). Helper scripts joined before it (ui/plot.py's
// SCRIPTS): plot_wheel.js (the wheel scrolls the page), plot_ring.js (the chooser's ring),
// plot_keep.js (a rerun's unchanged plot kept as drawn, its unchanged traces reused),
// plot_title.js (a title fitted to the plot's width).
/* global guardWheel, showRing, hideRing, keptAsDrawn, wantDrawn, drawFailed, shownCamera, fitTitle */
/* global shownFrame */
/* global reuseTraces, plotConfig */

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

// The drawn radius (px) of marker i of a trace (marker.size is a diameter, one or per point).
function markerRadius(trace, i) {
  const size = trace.marker && trace.marker.size;
  const value = Array.isArray(size) || ArrayBuffer.isView(size) ? size[i] : size;
  return isFinite(value) ? value / 2 : 0;
}

// Clickable markers (traces with customdata, except the selection ring) under the pointer:
// drawn within `radius` pixels of it, or a larger marker covering it; nearest first, one entry
// per head. `only3d`: the markers of 3D scenes only.
function markersNear(gd, at, radius, only3d) {
  const rect = gd.getBoundingClientRect();
  const found = new Map();
  for (const trace of gd._fullData || []) {
    if (trace.visible !== true || !trace.customdata) continue;
    if (trace.meta && trace.meta.role === "selected") continue;
    if (!/markers/.test(trace.mode || "markers")) continue;
    const threeD = trace.type === "scatter3d";
    if (only3d && !threeD) continue;
    const project = threeD ? project3d(gd, trace) : project2d(gd, trace);
    if (!project) continue;
    const choices = (trace.meta && trace.meta.choices) || [];
    for (let i = 0; i < trace.customdata.length; i++) {
      const xy = project(i);
      if (!xy || !isFinite(xy[0]) || !isFinite(xy[1])) continue;
      const distance = Math.hypot(rect.left + xy[0] - at.x, rect.top + xy[1] - at.y);
      if (distance > Math.max(radius, markerRadius(trace, i))) continue;
      const customdata = Array.from(trace.customdata[i]);
      const id = JSON.stringify(customdata);
      if (!found.has(id) || found.get(id).distance > distance) {
        found.set(id, { customdata, choice: choices[i], distance, xy });
      }
    }
  }
  return Array.from(found.values()).sort((a, b) => a.distance - b.distance);
}

// Decimals of the coordinates in the chooser: the paper's 3, more (up to MAX_DECIMALS) where
// 3 would show two of the listed heads with the same coordinates.
const MIN_DECIMALS = 3;
const MAX_DECIMALS = 6;

function coordinateText(coords, decimals) {
  return Object.entries(coords)
    .map(([name, value]) => name + " " + Number(value).toFixed(decimals))
    .join("  ");
}

function decimalsToSeparate(items) {
  const coords = items.map((item) => item.choice && item.choice.coords).filter(Boolean);
  for (let decimals = MIN_DECIMALS; decimals < MAX_DECIMALS; decimals++) {
    const texts = new Set(coords.map((c) => coordinateText(c, decimals)));
    if (texts.size === coords.length) return decimals;
  }
  return MAX_DECIMALS;
}

// One row of the chooser: [model,] head · parity, coordinates, distance to the pointer. A
// choice is {label, coords} (figures' meta.choices), or a plain label.
function choiceCells(item, decimals, withModel) {
  const choice = item.choice;
  const name = choice && typeof choice === "object" ? choice.label : choice;
  const head = name || item.customdata.slice(1).join(" · ");
  return [
    (withModel ? item.customdata[0] + " · " : "") + head,
    choice && choice.coords ? coordinateText(choice.coords, decimals) : "",
    item.distance.toFixed(1) + " px",
  ];
}

function hideChooser(wrap) {
  const old = wrap.querySelector(".hf-chooser");
  if (old) old.remove();
  hideRing(wrap);
  wrap.classList.remove("hf-choosing");
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
  const decimals = decimalsToSeparate(near);
  const models = new Set(near.map((item) => String(item.customdata[0])));
  header.textContent =
    near.length +
    " heads under the pointer, nearest first" +
    (decimals > MIN_DECIMALS ? " (" + decimals + " decimals tell them apart)" : "");
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
    for (const [i, text] of choiceCells(item, decimals, models.size > 1).entries()) {
      const cell = document.createElement("span");
      cell.className = ["hf-choice-head", "hf-choice-coords", "hf-choice-distance"][i];
      cell.textContent = text;
      button.appendChild(cell);
    }
    button.onclick = () => {
      hideChooser(wrap);
      send(wrap, wrap.querySelector("div.hf-plot"), item.customdata);
    };
    // the entry's marker ringed in the plot, from the pointer or the keyboard
    button.onmouseenter = button.onfocus = () => showRing(wrap, item.xy);
    box.appendChild(button);
  }
  wrap.appendChild(box);
  showRing(wrap, near[0].xy);
  wrap.classList.add("hf-choosing"); // hides plotly's hover label, which would cover the list
  // Beside the pointer (below and right of it, else above or left), inside the plot and, where
  // it fits, inside the window.
  const rect = wrap.getBoundingClientRect();
  const [width, height] = [box.offsetWidth, box.offsetHeight];
  const right = at.x + 12 + width <= Math.min(rect.right, window.innerWidth);
  const below = at.y + 12 + height <= Math.min(rect.bottom, window.innerHeight);
  const left = right ? at.x + 12 : at.x - 12 - width;
  const top = below || at.y - 12 - height < Math.max(rect.top, 0) ? at.y + 12 : at.y - 12 - height;
  box.style.left = Math.max(4, Math.min(left - rect.left, rect.width - width - 4)) + "px";
  box.style.top = Math.max(4, Math.min(top - rect.top, rect.height - height - 4)) + "px";
  wrap.hfDismiss = (event) => {
    if (event.type === "keydown" ? event.key === "Escape" : !box.contains(event.target)) {
      hideChooser(wrap);
    }
  };
  document.addEventListener("pointerdown", wrap.hfDismiss, true);
  document.addEventListener("keydown", wrap.hfDismiss, true);
}

// Send the head under the pointer, or list them when there are several.
function choose(wrap, gd, near, at) {
  if (near.length > 1) {
    if (gd.hfPlotly) gd.hfPlotly.Fx.unhover(gd);
    showChooser(wrap, near, at);
    return;
  }
  hideChooser(wrap);
  if (near.length === 1) send(wrap, gd, near[0].customdata);
}

// A click's head; a camera report still waiting goes first (the click may leave the page).
function send(wrap, gd, customdata) {
  if (gd.hfCameraTimer) sendCamera(wrap, gd);
  wrap.hfSend("clicked", customdata);
}

// 2D plots: plotly.js reports the click (it finds the hovered point as the button goes down).
function onPlotClick(wrap, gd, event) {
  const point = event && event.points && event.points[0];
  if (!point || point.data.type === "scatter3d") return; // 3D: watchSceneClicks
  const near = gd.hfPointer ? markersNear(gd, gd.hfPointer, wrap.hfData.pick_radius, false) : [];
  if (near.length) {
    choose(wrap, gd, near, gd.hfPointer);
  } else if (point.customdata !== undefined && point.customdata !== null) {
    hideChooser(wrap);
    send(wrap, gd, Array.from(point.customdata));
  }
}

// 3D scenes: plotly.js reports a click only for a marker its scene picked under a still pointer,
// on a later animation frame, so a click soon after the pointer arrives, or a short press, is
// lost. A press and release on the scene that moves at most CLICK_SLOP_PX (more is a rotation)
// is resolved here at once, from the markers' projected positions.
const CLICK_SLOP_PX = 4;

function watchSceneClicks(wrap, gd) {
  let pressed = null;
  gd.addEventListener(
    "pointerdown",
    (event) => {
      const onScene = event.button === 0 && event.target.closest(".gl-container");
      pressed = onScene ? { x: event.clientX, y: event.clientY } : null;
    },
    true
  );
  gd.addEventListener(
    "pointerup",
    (event) => {
      const at = { x: event.clientX, y: event.clientY };
      const start = pressed;
      pressed = null;
      if (!start || event.button !== 0) return;
      if (Math.hypot(at.x - start.x, at.y - start.y) > CLICK_SLOP_PX) return;
      const near = markersNear(gd, at, wrap.hfData.pick_radius, true);
      if (near.length) choose(wrap, gd, near, at);
    },
    true
  );
}

// The 3D camera: when Python asks for it (data.report_camera), each rotation or zoom of the
// visitor's is reported (state value "camera", CAMERA_REPORT_MS after the last), and Python's
// camera (data.camera: the last reported, or a link's) is the one drawn. plotly.js's
// uirevision alone does not keep a turned camera across a rerun that redraws the figure.
const CAMERA_REPORT_MS = 400;

function applyCamera(figure, data) {
  const scene = figure.layout && figure.layout.scene;
  if (scene && data.camera) scene.camera = data.camera;
}

// The scene's camera now, as the state value sends it (or null for a 2D plot).
function sceneCamera(gd) {
  const camera = gd._fullLayout && gd._fullLayout.scene && gd._fullLayout.scene.camera;
  if (!camera) return null;
  const xyz = (v) => ({ x: v.x, y: v.y, z: v.z });
  return { eye: xyz(camera.eye), center: xyz(camera.center), up: xyz(camera.up) };
}

// The scene's view matrix: what the visitor sees (the camera's numbers can change form, e.g.
// its up vector, without the view changing).
function sceneView(gd) {
  const scene = gd._fullLayout && gd._fullLayout.scene && gd._fullLayout.scene._scene;
  return scene && scene.glplot ? Array.from(scene.glplot.cameraParams.view) : null;
}

function sameView(a, b) {
  return Boolean(a && b) && a.every((value, i) => Math.abs(value - b[i]) < 1e-6);
}

// plotly.js announces the camera after every press on the scene, moved or not: only a view
// other than the one last drawn or reported is sent (a rerun for nothing could overtake the
// page switch of a click).
function sendCamera(wrap, gd) {
  clearTimeout(gd.hfCameraTimer);
  gd.hfCameraTimer = null;
  const view = sceneView(gd);
  const camera = sceneCamera(gd);
  if (!camera || !view || sameView(view, gd.hfViewShown)) return;
  gd.hfViewShown = view;
  shownCamera(gd, camera); // ui/plot_keep.js: the rerun it causes keeps the scene as it is
  wrap.hfSetState("camera", camera);
}

function reportCamera(wrap, gd, update) {
  if (!wrap.hfData.report_camera) return;
  if (!Object.keys(update || {}).some((key) => key.startsWith("scene.camera"))) return;
  clearTimeout(gd.hfCameraTimer);
  gd.hfCameraTimer = setTimeout(() => sendCamera(wrap, gd), CAMERA_REPORT_MS);
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
  applyCamera(figure, data);
  applyHidden(figure, data); // ui/plot_legend.js
  reuseTraces(gd, figure); // ui/plot_keep.js: the traces drawn now, where equal
  rememberLabels(gd, figure); // ui/plot_labels.js
  const frames = figure.frames || [];
  const config = plotConfig(gd, Plotly, data);
  await Plotly.react(gd, { data: figure.data, layout: figure.layout, config, frames });
  // plotly.js (4.1) redraws a plot whose config changed (e.g. a 3D figure replaced by a 2D one,
  // whose exports differ) with Plotly.newPlot, which leaves the frames out: they are added here.
  if (frames.length && !(gd._transitionData && gd._transitionData._frames.length)) {
    await Plotly.addFrames(gd, frames);
  }
  performance.mark("hf:drawn:" + data.key); // for benchmarks/bench_first_paint.py
  gd.hfViewShown = sceneView(gd);
  await placeLabels(gd, Plotly); // ui/plot_labels.js
  if (!gd.hfBound) {
    gd.hfBound = true;
    gd.on("plotly_click", (event) => onPlotClick(wrap, gd, event));
    gd.on("plotly_relayout", (update) => reportCamera(wrap, gd, update));
    gd.on("plotly_relayout", (update) => labelsAfterRelayout(gd, gd.hfPlotly, update));
    gd.on("plotly_restyle", (update) => reportHidden(wrap, gd, update));
    // The point of an animated figure shown now (slider or Play), kept across reruns, and
    // reported to Python once the visitor stops moving it (data.report_frame).
    gd.on("plotly_animatingframe", (event) => {
      gd.hfFrame = { axis: gd.hfAxis, name: event.name };
      reportFrame(wrap, gd, event.name);
    });
    // A frame brings the labels of its point as the figure placed them: placed again once the
    // slider or Play stops (ui/plot_labels.js).
    gd.on("plotly_animated", () => placeLabels(gd, gd.hfPlotly));
  }
  await keepFrame(gd, Plotly, figure, data);
}

// An animated figure (figures/animated.py: one frame per point of a path, named by its value)
// drawn again shows the point Python asks for (data.report_frame: data.frame, where the visitor
// left the slider, a link's, or the figure's own start; ui/plot.py's frame_link decides), else
// the point the visitor had moved to (same axis), not its first point again; a path still
// growing (meta.follow: a training run that records) shown at its last point follows its new
// last point (the figure's own start). A frame the plot does not hold is left alone.
async function keepFrame(gd, Plotly, figure, data) {
  const meta = (figure.layout && figure.layout.meta) || {};
  const frames = figure.frames || [];
  const previous = gd.hfFrame;
  const lastBefore = gd.hfLastFrame;
  gd.hfAxis = meta.axis;
  gd.hfLastFrame = frames.length ? frames[frames.length - 1].name : undefined;
  let name = null;
  if (data.report_frame) {
    name = data.frame;
  } else if (previous && previous.axis === meta.axis) {
    if (meta.follow && previous.name === lastBefore) gd.hfFrame = undefined;
    else name = previous.name;
  }
  const held = gd._transitionData && gd._transitionData._frameHash;
  if (name === null || name === undefined || !held || !held[name]) return;
  gd.hfFrame = { axis: meta.axis, name };
  const slider = ((figure.layout && figure.layout.sliders) || [])[0];
  const step = slider && slider.steps && slider.steps[slider.active || 0];
  if (step && step.label === String(name)) return; // the figure starts there: drawn already
  await Plotly.animate(gd, [String(name)], {
    mode: "immediate",
    frame: { duration: 0, redraw: true },
    transition: { duration: 0 },
  });
  // plotly.js moves a slider along an animation it did not start only while its steps are the
  // ones it bound: a figure that gained a step (a run that records) keeps its own start there
  const index = slider ? slider.steps.findIndex((s) => s.label === String(name)) : -1;
  const shown = gd._fullLayout.sliders && gd._fullLayout.sliders[0];
  if (index >= 0 && shown && shown.active !== index) {
    await Plotly.relayout(gd, { "sliders[0].active": index });
  }
}

// The frame shown, sent as the state value "frame" FRAME_REPORT_MS after the last step of the
// slider or of Play (a played path is reported where it stops), unless Python shows it already.
const FRAME_REPORT_MS = 400;

function reportFrame(wrap, gd, name) {
  if (!wrap.hfData.report_frame) return;
  clearTimeout(gd.hfFrameTimer);
  gd.hfFrameTimer = setTimeout(() => {
    if (String(wrap.hfData.frame) === String(name)) return;
    shownFrame(gd, name); // ui/plot_keep.js: the rerun it causes keeps the plot as it is
    wrap.hfSetState("frame", String(name));
  }, FRAME_REPORT_MS);
}

export default function ({ data, parentElement, setStateValue, setTriggerValue }) {
  let wrap = parentElement.querySelector("div.hf-plot-wrap");
  if (!wrap) {
    wrap = document.createElement("div");
    wrap.className = "hf-plot-wrap";
    const plot = document.createElement("div");
    plot.className = "hf-plot";
    const remember = (e) => (plot.hfPointer = { x: e.clientX, y: e.clientY });
    plot.addEventListener("pointerdown", remember, true);
    watchSceneClicks(wrap, plot);
    guardWheel(wrap);
    wrap.appendChild(plot);
    parentElement.appendChild(wrap);
  }
  const gd = wrap.querySelector("div.hf-plot");
  gd.setAttribute(data.attribute, data.key);
  gd.style.height = data.height + "px";
  wrap.hfSend = setTriggerValue;
  wrap.hfSetState = setStateValue;
  wrap.hfData = data;
  performance.mark("hf:mount:" + data.key);
  // Called on unmount (and possibly before a re-render): purge only if really detached.
  const cleanup = () => {
    setTimeout(() => {
      if (gd.isConnected || !gd.hfPlotly) return;
      gd.hfPlotly.purge(gd);
      drawFailed(gd); // nothing is drawn any more
    }, 0);
  };
  if (keptAsDrawn(gd, data)) {
    performance.mark("hf:kept:" + data.key); // ui/plot_keep.js: nothing to draw
    return cleanup;
  }
  wantDrawn(gd, data);
  const figure = JSON.parse(data.figure);
  const threeD = figure.data.some((trace) => trace.type === "scatter3d") ? 1 : 0;
  loadBundle(chooseBundle(figure, data.plotly))
    .then((Plotly) => {
      performance.mark("hf:plotly:" + data.key);
      return inTurn(() => draw(wrap, gd, Plotly, figure, data), threeD);
    })
    .catch((error) => {
      drawFailed(gd);
      gd.textContent = String(error);
    });
  return cleanup;
}
