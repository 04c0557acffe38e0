// What a rerun leaves as it was is not drawn again (ui/plot.js; concatenated before it by
// ui/plot.py). A step from one head to another reruns the whole page: every plot gets its data
// again, most often the very figure it shows. Such a plot is kept as drawn (no JSON.parse, no
// Plotly.react), unless what Python asks for differs from what it shows: the figure, its height,
// toolbar, the camera (a link's, not the one the visitor's rotation reported), the hidden
// legend entries (not the ones the visitor's legend click reported) or an animated figure's
// frame (not the one the visitor's slider reported). A figure that did change
// reuses the traces it shares with the one drawn (the same objects, so that Plotly.react's diff
// finds them unchanged: the 3D scene keeps them, and only the selected head's ring is new), and
// the same config object (a new one would make Plotly.react start the plot anew).
// Linted by eslint (eslint.config.mjs: a classic script whose functions plot.js calls).
/* exported keptAsDrawn, wantDrawn, drawFailed, shownCamera, shownHidden, shownFrame */
/* exported reuseTraces, plotConfig */
/* global imageOptions */

// The camera as one comparable string (or "" for none).
function cameraText(camera) {
  if (!camera) return "";
  return ["eye", "center", "up"]
    .map((part) => ["x", "y", "z"].map((axis) => Number((camera[part] || {})[axis])).join(","))
    .join(";");
}

function hiddenText(data) {
  return data.report_hidden ? JSON.stringify((data.hidden || []).slice().sort()) : "";
}

function frameText(data) {
  return data.report_frame && data.frame !== null ? String(data.frame) : "";
}

// Everything of data.* but the figure, the camera and the hidden entries that changes a drawing.
function drawnWith(data) {
  return JSON.stringify([
    data.height, data.scroll_zoom, data.vector, data.filename, data.png_scale, data.plotly,
  ]);
}

// Whether the plot shows (or will, once its queued draw runs) what `data` asks for.
function keptAsDrawn(gd, data) {
  const want = gd.hfWanted;
  return Boolean(
    want &&
      want.figure === data.figure &&
      want.rest === drawnWith(data) &&
      want.camera === cameraText(data.camera) &&
      want.hidden === hiddenText(data) &&
      want.frame === frameText(data)
  );
}

// Remember what a draw about to be queued shows.
function wantDrawn(gd, data) {
  gd.hfWanted = {
    figure: data.figure,
    rest: drawnWith(data),
    camera: cameraText(data.camera),
    hidden: hiddenText(data),
    frame: frameText(data),
  };
}

// A draw that failed shows nothing certain: the next rerun draws again.
function drawFailed(gd) {
  gd.hfWanted = null;
}

// The visitor turned the scene to `camera` (reported to Python): a rerun bringing it back is kept.
function shownCamera(gd, camera) {
  if (gd.hfWanted) gd.hfWanted.camera = cameraText(camera);
}

// The visitor moved an animated figure to the frame `name` (reported to Python): likewise.
function shownFrame(gd, name) {
  if (gd.hfWanted) gd.hfWanted.frame = String(name);
}

// The visitor hid the legend entries `names` (reported to Python): likewise.
function shownHidden(gd, names) {
  if (gd.hfWanted) gd.hfWanted.hidden = JSON.stringify(names.slice().sort());
}

// Put the traces drawn now (plotly.js's own objects) in place of the figure's equal ones, and
// remember the figure's traces as text for the next draw. Call after every change to the
// figure's traces (after applyHidden).
function reuseTraces(gd, figure) {
  const texts = figure.data.map((trace) => JSON.stringify(trace));
  const before = gd.hfTraceTexts || [];
  const drawn = gd.data || [];
  if (drawn.length === before.length) {
    texts.forEach((text, i) => {
      if (text === before[i] && drawn[i]) figure.data[i] = drawn[i];
    });
  }
  gd.hfTraceTexts = texts;
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
    click: (gd) => Plotly.downloadImage(gd, imageOptions(gd, { format, filename, scale })),
  }));
}

// The plot's config, the same object while its inputs are the same: plotly.js compares a new
// config with the one drawn (its download buttons' functions by identity), and a config that
// differs makes Plotly.react a Plotly.newPlot, which builds a 3D scene's WebGL canvas anew.
function plotConfig(gd, Plotly, data) {
  const key = JSON.stringify([data.scroll_zoom, data.filename, data.vector, data.png_scale]);
  if (gd.hfConfig && gd.hfConfig.key === key && gd.hfConfig.Plotly === Plotly) {
    return gd.hfConfig.config;
  }
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
  gd.hfConfig = { key, Plotly, config };
  return config;
}
