// Labels of a 3D scene kept inside the plot and off one another (ui/plot.py joins this file and
// ui/plot.js into the component's one module). plotly.js draws a scene annotation where its point
// projects, whatever the camera: after a rotation (or in a shared link's view) a vertex label can
// be cut at the plot's edge and face labels can stack on one another. After each draw and each
// camera change, every label's drawn box is measured and the label moved (its xshift/yshift, or
// ax/ay for one with an arrow, which keeps pointing at its head) by the least offset that puts it
// inside the scene's area and off the labels placed before it: the selected head's name first,
// then the vertices, the hints, the faces. A label whose point is out of view is hidden (a
// vertex's label pulled inside would sit in a far corner, naming nothing there), and a hint
// toward such a vertex goes to the edge of the view on the vertex's side, off the selected
// head's ring; a hint toward a vertex in view is hidden. The offsets are written into the
// figure's layout (Plotly.relayout), so the PNG export draws the labels where the page shows
// them.
// Linted by eslint (eslint.config.mjs, `make lint`).

const LABEL_PAD_PX = 3; // kept free between two labels and inside the plot's edge
const LABEL_STEP_PX = 6; // offsets tried grow by this
const LABEL_REACH_PX = 160; // farthest a label is moved from where plotly.js draws it
const LABEL_SETTLE_MS = 120; // after the last camera change
const LABEL_ORDER = ["selected", "vertex", "hint"]; // placed first; every other label after

// The scene's area in the plot's pixels (what a label must stay inside).
function sceneArea(gd) {
  const full = gd._fullLayout;
  const size = full._size;
  const dom = full.scene.domain;
  return {
    left: size.l + dom.x[0] * size.w + LABEL_PAD_PX,
    right: size.l + dom.x[1] * size.w - LABEL_PAD_PX,
    top: size.t + (1 - dom.y[1]) * size.h + LABEL_PAD_PX,
    bottom: size.t + (1 - dom.y[0]) * size.h - LABEL_PAD_PX,
  };
}

// The drawn box of scene annotation `index` in the plot's pixels, or null if it is not drawn.
function labelBox(gd, index) {
  const text = gd.querySelector(
    '.annotation-scene[data-index="' + index + '"] .annotation-text-g'
  );
  if (!text) return null;
  const rect = text.getBoundingClientRect();
  if (!rect.width || !rect.height) return null;
  const origin = gd.getBoundingClientRect();
  return {
    left: rect.left - origin.left,
    right: rect.right - origin.left,
    top: rect.top - origin.top,
    bottom: rect.bottom - origin.top,
  };
}

function shifted(box, dx, dy) {
  return { left: box.left + dx, right: box.right + dx, top: box.top + dy, bottom: box.bottom + dy };
}

function overlaps(a, b) {
  return (
    a.left < b.right + LABEL_PAD_PX &&
    b.left < a.right + LABEL_PAD_PX &&
    a.top < b.bottom + LABEL_PAD_PX &&
    b.top < a.bottom + LABEL_PAD_PX
  );
}

// The offset that brings `box` inside `area` (as far as it fits).
function inside(box, area) {
  const dx = box.left < area.left ? area.left - box.left : Math.min(0, area.right - box.right);
  const dy = box.top < area.top ? area.top - box.top : Math.min(0, area.bottom - box.bottom);
  return [dx, dy];
}

// Offsets to try, nearest first: rings of LABEL_STEP_PX, 16 directions each.
function labelOffsets() {
  const out = [[0, 0]];
  for (let r = LABEL_STEP_PX; r <= LABEL_REACH_PX; r += LABEL_STEP_PX) {
    for (let k = 0; k < 16; k++) {
      const angle = (k * Math.PI) / 8;
      out.push([Math.round(r * Math.cos(angle)), Math.round(r * Math.sin(angle))]);
    }
  }
  return out;
}

// Where `box` goes: the nearest offset inside `area` and off every `placed` box, else just
// inside `area`.
function placeBox(box, area, placed) {
  const [inX, inY] = inside(box, area);
  for (const [dx, dy] of labelOffsets()) {
    const moved = shifted(box, inX + dx, inY + dy);
    const [backX, backY] = inside(moved, area);
    if (backX || backY) continue;
    if (!placed.some((other) => overlaps(moved, other))) return [inX + dx, inY + dy];
  }
  return [inX, inY];
}

// Project scene points to the plot's pixels with the scene's camera: (x, y, z) -> {x, y,
// front} (front: before the camera), or null before the scene is drawn.
function sceneProjector(gd) {
  const full = gd._fullLayout;
  const scene = full.scene && full.scene._scene;
  if (!scene || !scene.glplot) return null;
  const cam = scene.glplot.cameraParams;
  const scale = scene.dataScale;
  const size = full._size;
  const dom = full.scene.domain;
  const left = size.l + dom.x[0] * size.w;
  const width = (dom.x[1] - dom.x[0]) * size.w;
  const top = size.t + (1 - dom.y[1]) * size.h;
  const height = (dom.y[1] - dom.y[0]) * size.h;
  const mul = (m, v) =>
    [0, 1, 2, 3].map((r) => m[r] * v[0] + m[4 + r] * v[1] + m[8 + r] * v[2] + m[12 + r] * v[3]);
  return (x, y, z) => {
    const clip = mul(cam.projection, mul(cam.view, mul(cam.model, [
      x * scale[0], y * scale[1], z * scale[2], 1,
    ])));
    const w = clip[3];
    return {
      x: left + ((clip[0] / w + 1) / 2) * width,
      y: top + ((1 - clip[1] / w) / 2) * height,
      front: w > 0,
    };
  };
}

// The boxes labels keep off: the selected head's ring, and its name where a trace draws it as
// WebGL text (an animated view's ring, whose name rides with it).
function ringBoxes(gd, project) {
  const boxes = [];
  for (const trace of gd._fullData) {
    const role = trace.meta && trace.meta.role;
    if (role !== "selected" || trace.type !== "scatter3d") continue;
    const at = project(trace.x[0], trace.y[0], trace.z[0]);
    if (!at.front) continue;
    const half = ((trace.marker && trace.marker.size) || 15) / 2 + LABEL_PAD_PX;
    boxes.push({ left: at.x - half, right: at.x + half, top: at.y - half, bottom: at.y + half });
    if (String(trace.mode).includes("text")) {
      boxes.push({ left: at.x - 30, right: at.x + 30, top: at.y - 30, bottom: at.y + 8 });
    }
  }
  return boxes;
}

function insideArea(at, area) {
  return Boolean(
    at && at.front && at.x >= area.left && at.x <= area.right && at.y >= area.top &&
      at.y <= area.bottom
  );
}

// A label's text as one line (a hint names its vertex's label that way: "→ toward c = 1 P").
function oneLine(text) {
  return String(text || "").replace(/<br\s*\/?>/gi, " ").replace(/<[^>]+>/g, "").trim();
}

const HINT_PREFIX = "→ toward ";

// Which labels to draw: a label whose point is out of view is hidden (pulled inside, a vertex's
// label sat in a far corner of the frame, naming nothing there), but the selected head's name;
// a hint toward a vertex only while that vertex is out of view.
function labelsShown(annotations, anchors, area, base) {
  const vertexShown = {};
  annotations.forEach((a, i) => {
    if (a.name === "vertex") vertexShown[oneLine(a.text)] = insideArea(anchors[i], area);
  });
  return annotations.map((a, i) => {
    if (!base[i].visible) return false;
    if (a.name === "selected") return true;
    if (a.name === "hint") {
      const target = oneLine(a.text).replace(HINT_PREFIX, "");
      return !vertexShown[target];
    }
    return insideArea(anchors[i], area);
  });
}

// Where a hint goes: at the edge of the view, toward its vertex as the camera sees it (behind
// the camera: the other way), clear of the edge by its own size. Returns the offset of the
// hint's drawn box (natural: where plotly.js draws it at its own point) to that place.
function towardTheEdge(natural, vertexAt, area) {
  const cx = (area.left + area.right) / 2;
  const cy = (area.top + area.bottom) / 2;
  let dx = vertexAt.x - cx;
  let dy = vertexAt.y - cy;
  if (!vertexAt.front) [dx, dy] = [-dx, -dy];
  const w = (natural.right - natural.left) / 2 + LABEL_PAD_PX;
  const h = (natural.bottom - natural.top) / 2 + LABEL_PAD_PX;
  const reachX = Math.max(1, (area.right - area.left) / 2 - w);
  const reachY = Math.max(1, (area.bottom - area.top) / 2 - h);
  const t = Math.min(reachX / Math.max(Math.abs(dx), 1e-9), reachY / Math.max(Math.abs(dy), 1e-9));
  const x = cx + dx * t;
  const y = cy + dy * t;
  return [x - (natural.left + natural.right) / 2, y - (natural.top + natural.bottom) / 2];
}

function labelRank(name) {
  const rank = LABEL_ORDER.indexOf(name);
  return rank < 0 ? LABEL_ORDER.length : rank;
}

// Each scene annotation's offsets as the figure set them (before any placing): what a new
// placement starts from.
function rememberLabels(gd, figure) {
  const scene = figure.layout && figure.layout.scene;
  gd.hfLabelBase = ((scene && scene.annotations) || []).map((a) => ({
    arrow: a.showarrow !== false,
    xshift: a.xshift || 0,
    yshift: a.yshift || 0,
    ax: a.ax === undefined ? -10 : a.ax,
    ay: a.ay === undefined ? -30 : a.ay,
    visible: a.visible !== false,
  }));
}

// The layout update that shows the labels that belong in view and hides the others (empty if
// none changes), as labelsShown decides.
function visibilityUpdate(gd) {
  const annotations = givenLabels(gd);
  const base = gd.hfLabelBase || [];
  const project = sceneProjector(gd);
  if (!project || !annotations.length || annotations.length !== base.length) return {};
  const anchors = annotations.map((a) => project(a.x, a.y, a.z));
  const shown = labelsShown(annotations, anchors, sceneArea(gd), base);
  const update = {};
  annotations.forEach((a, i) => {
    if ((a.visible !== false) !== shown[i]) update["scene.annotations[" + i + "].visible"] = shown[i];
  });
  return update;
}

// The scene's labels as the figure gives them (plotly.js's full layout keeps nothing of a
// hidden one: neither its text nor its point).
function givenLabels(gd) {
  const scene = gd.layout && gd.layout.scene;
  return (scene && scene.annotations) || [];
}

// The layout update that places every label of the scene (empty if all are in place).
function labelUpdate(gd) {
  const full = gd._fullLayout;
  const annotations = (full.scene && full.scene.annotations) || [];
  const base = gd.hfLabelBase || [];
  if (!annotations.length || annotations.length !== base.length) return {};
  const area = sceneArea(gd);
  const project = sceneProjector(gd);
  if (!project) return {};
  const order = annotations
    .map((annotation, index) => ({ annotation, index }))
    .filter((item) => item.annotation.visible !== false)
    .sort((a, b) => labelRank(a.annotation.name) - labelRank(b.annotation.name));
  const vertices = {};
  givenLabels(gd).forEach((a) => {
    if (a.name === "vertex") vertices[oneLine(a.text)] = project(a.x, a.y, a.z);
  });
  const placed = ringBoxes(gd, project);
  const update = {};
  for (const { annotation, index } of order) {
    const box = labelBox(gd, index);
    if (!box) continue;
    const start = base[index];
    // the box where plotly.js would draw it with the figure's own offsets
    const nowX = start.arrow ? annotation.ax - start.ax : annotation.xshift - start.xshift;
    const nowY = start.arrow ? annotation.ay - start.ay : start.yshift - annotation.yshift;
    const natural = shifted(box, -nowX, -nowY);
    const vertex = annotation.name === "hint" &&
      vertices[oneLine(annotation.text).replace(HINT_PREFIX, "")];
    const [toX, toY] = vertex ? towardTheEdge(natural, vertex, area) : [0, 0];
    const [byX, byY] = placeBox(shifted(natural, toX, toY), area, placed);
    const [dx, dy] = [toX + byX, toY + byY];
    placed.push(shifted(natural, dx, dy));
    if (Math.abs(dx - nowX) < 0.5 && Math.abs(dy - nowY) < 0.5) continue;
    const key = "scene.annotations[" + index + "].";
    if (start.arrow) {
      update[key + "ax"] = start.ax + dx;
      update[key + "ay"] = start.ay + dy;
    } else {
      update[key + "xshift"] = start.xshift + dx;
      update[key + "yshift"] = start.yshift - dy;
    }
  }
  return update;
}

// Options of an exported image: the size the page shows (plotly.js would draw a responsive
// figure 700 px wide), so that its labels sit where they were placed.
function imageOptions(gd, options) {
  const full = gd._fullLayout || {};
  return Object.assign({ width: full.width, height: full.height }, options);
}

// Place the scene's labels now (after a draw). The relayout it makes is not a camera change.
async function placeLabels(gd, Plotly) {
  gd.hfImageOptions = (options) => imageOptions(gd, options); // what the export uses (tests)
  if (!gd._fullLayout || !gd._fullLayout.scene || !gd.hfLabelBase) return;
  gd.hfPlacingLabels = true;
  try {
    const shown = visibilityUpdate(gd); // first what is drawn, then where (from the drawn boxes)
    if (Object.keys(shown).length) await Plotly.relayout(gd, shown);
    const update = labelUpdate(gd);
    if (Object.keys(update).length) await Plotly.relayout(gd, update);
  } finally {
    gd.hfPlacingLabels = false;
  }
}

// Place them again once a camera change (a rotation, a zoom, a resize) has settled.
function labelsAfterRelayout(gd, Plotly, update) {
  if (gd.hfPlacingLabels) return;
  const keys = Object.keys(update || {});
  const moved = keys.some(
    (key) => key.startsWith("scene.camera") || key === "autosize" || key === "width"
  );
  if (!moved) return;
  clearTimeout(gd.hfLabelTimer);
  gd.hfLabelTimer = setTimeout(() => placeLabels(gd, Plotly), LABEL_SETTLE_MS);
}
