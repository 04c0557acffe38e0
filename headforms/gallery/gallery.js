// The gallery page written by headforms (headforms/gallery/page.py): draws the figures from the
// JSON beside this script with the embedded plotly.js, rebuilds the animation frames of the
// RoPE positions from their packed profile values, and shows a clicked head's numbers and
// spectrum. No network: every byte it needs is in the page.
// Linted by eslint (eslint.config.mjs, `make lint`).
(function () {
  "use strict";

  const data = JSON.parse(document.getElementById("gallery-data").textContent);
  const CONFIG = { displaylogo: false, responsive: true, scrollZoom: true };
  const BINS = 40;
  const plots = {};
  const frames = {};
  const columns = data.table.columns;
  const rowOf = new Map();
  const column = (name) => columns.indexOf(name);
  data.table.rows.forEach((row, index) => {
    rowOf.set(row[column("layer")] + ":" + row[column("head")], index);
  });

  // An array packed by page.py: little-endian bytes in base64 with their dtype and shape.
  function decode(packed) {
    const raw = atob(packed.bytes);
    const bytes = new Uint8Array(raw.length);
    for (let i = 0; i < raw.length; i += 1) bytes[i] = raw.charCodeAt(i);
    return packed.dtype === "float32" ? new Float32Array(bytes.buffer) : bytes;
  }

  // A head's coordinates as the animated figure's hover text shows them: ".123, .456, ...".
  function hoverText(values, offset, count) {
    const parts = [];
    for (let c = 0; c < count; c += 1) {
      const value = values[offset + c];
      if (!Number.isFinite(value)) return "";
      parts.push(value.toFixed(3).replace("0.", "."));
    }
    return parts.join(", ");
  }

  // The frames of an animated view (one per position): for each parity type's trace, every
  // head's point where it has that type (NaN elsewhere) and its hover text, as the figure's
  // builder (headforms.figures.animated) makes them.
  function buildFrames(pack, parityPack) {
    const values = decode(pack.values);
    const parity = decode(parityPack);
    const [points, heads, count] = pack.values.shape;
    const axes = pack.three_d ? ["x", "y", "z"] : ["x", "y"];
    const built = [];
    for (let p = 0; p < points; p += 1) {
      const coordinates = axes.map(() => new Float32Array(heads));
      const text = new Array(heads);
      for (let h = 0; h < heads; h += 1) {
        const offset = (p * heads + h) * count;
        axes.forEach((_, a) => {
          let sum = 0;
          for (let c = 0; c < count; c += 1) sum += values[offset + c] * pack.vertices[c][a];
          coordinates[a][h] = sum;
        });
        text[h] = hoverText(values, offset, count);
      }
      const traces = pack.traces.map((_, label) => {
        const drawn = (h) => parity[p * heads + h] === label;
        const trace = { type: pack.three_d ? "scatter3d" : "scatter" };
        axes.forEach((axis, a) => {
          const shown = new Float32Array(heads);
          for (let h = 0; h < heads; h += 1) shown[h] = drawn(h) ? coordinates[a][h] : NaN;
          trace[axis] = shown;
        });
        trace.text = text.map((value, h) => (drawn(h) ? value : ""));
        return trace;
      });
      built.push({ name: pack.names[p], traces: pack.traces, data: traces });
    }
    return built;
  }

  function draw(id, figure, figureFrames) {
    const element = document.getElementById(id);
    if (!element || !figure) return Promise.resolve(null);
    // The box as tall as the figure: a fixed box would cut off what lies below its height (the
    // animated simplex's legend, under its slider).
    if (figure.layout && figure.layout.height) element.style.height = figure.layout.height + "px";
    return Plotly.newPlot(element, figure.data, figure.layout, CONFIG)
      .then((gd) => (figureFrames ? Plotly.addFrames(gd, figureFrames).then(() => gd) : gd))
      .then((gd) => {
        gd.on("plotly_click", (event) => {
          const point = event.points && event.points[0];
          const payload = point && point.customdata;
          if (Array.isArray(payload) && payload.length >= 3) {
            showHead(Number(payload[1]), Number(payload[2]));
          }
        });
        plots[id] = gd;
        return gd;
      });
  }

  function format(value) {
    if (value === null || value === undefined) return "—";
    if (typeof value !== "number") return String(value);
    return Number.isInteger(value) ? String(value) : value.toPrecision(4);
  }

  const spectra = data.spectra ? decode(data.spectra) : null;

  // The histogram of the head's non-zero eigenvalues of S over ||S||, lobes coloured.
  function spectrumTraces(index) {
    const [, width] = data.spectra.shape;
    const all = spectra.subarray(index * width, (index + 1) * width);
    const norm = Math.sqrt(all.reduce((sum, v) => sum + v * v, 0)) || 1;
    const values = Array.from(all, (v) => v / norm).filter((v) => v !== 0);
    const extent = Math.max(...values.map(Math.abs), 1e-12);
    const step = (2 * extent) / BINS;
    const counts = new Array(BINS).fill(0);
    values.forEach((v) => {
      counts[Math.min(BINS - 1, Math.floor((v + extent) / step))] += 1;
    });
    const centres = counts.map((_, i) => -extent + (i + 0.5) * step);
    const lobe = (sign, name, color) => ({
      type: "bar",
      x: centres.filter((c) => sign * c > 0),
      y: counts.filter((_, i) => sign * centres[i] > 0),
      width: step,
      name,
      marker: { color },
    });
    return [
      lobe(1, "λ₊ (positive)", data.colors.positive),
      lobe(-1, "λ₋ (negative)", data.colors.negative),
    ];
  }

  function showHead(layer, head) {
    const index = rowOf.get(layer + ":" + head);
    if (index === undefined) return;
    const row = data.table.rows[index];
    const panel = document.getElementById("head-panel");
    panel.hidden = false;
    document.getElementById("head-title").textContent =
      `${data.model}: L${layer}·H${head} · ${row[column("parity")]}`;
    const numbers = document.getElementById("head-numbers");
    numbers.replaceChildren();
    columns.forEach((name, c) => {
      if (name === "layer" || name === "head") return;
      const tr = numbers.insertRow();
      const label = tr.insertCell();
      label.textContent = name;
      label.title = data.descriptions[name] || "";
      tr.insertCell().textContent = format(row[c]);
    });
    const target = document.getElementById("head-spectrum");
    if (spectra) {
      const layout = {
        barmode: "overlay",
        bargap: 0,
        margin: { l: 40, r: 10, t: 30, b: 40 },
        legend: { orientation: "h", x: 0, y: 1.02, yanchor: "bottom" },
        xaxis: { title: { text: "eigenvalue of S / ‖S‖" } },
        yaxis: { title: { text: "eigenvalues per bin" } },
      };
      Plotly.react(target, spectrumTraces(index), layout, CONFIG);
    } else {
      target.textContent = "This source holds no spectra (a published table without its file).";
    }
    document.querySelectorAll("#heads tr.chosen").forEach((tr) => tr.classList.remove("chosen"));
    const chosen = document.querySelector(`#heads tr[data-index="${index}"]`);
    if (chosen) chosen.classList.add("chosen");
    gallery.shown = { layer, head, index };
  }

  // The head table: one row per head, sortable by any column (missing values last).
  function fillTable() {
    const table = document.getElementById("heads");
    const head = table.createTHead().insertRow();
    let order = { column: -1, ascending: true };
    const body = table.createTBody();
    const render = (indices) => {
      body.replaceChildren();
      indices.forEach((index) => {
        const tr = body.insertRow();
        tr.dataset.index = String(index);
        data.table.rows[index].forEach((value) => {
          tr.insertCell().textContent = format(value);
        });
        tr.addEventListener("click", () => {
          const row = data.table.rows[index];
          showHead(row[column("layer")], row[column("head")]);
        });
      });
    };
    columns.forEach((name, c) => {
      const th = document.createElement("th");
      th.textContent = name;
      th.title = data.descriptions[name] || "";
      th.addEventListener("click", () => {
        order = { column: c, ascending: order.column === c ? !order.ascending : true };
        const sign = order.ascending ? 1 : -1;
        const key = (i) => data.table.rows[i][c];
        const indices = data.table.rows.map((_, i) => i);
        indices.sort((i, j) => {
          const a = key(i);
          const b = key(j);
          if (a === null) return b === null ? 0 : 1;
          if (b === null) return -1;
          return (a < b ? -1 : a > b ? 1 : 0) * sign;
        });
        render(indices);
      });
      head.appendChild(th);
    });
    render(data.table.rows.map((_, i) => i));
  }

  document.getElementById("model").textContent = data.model;
  const card = document.getElementById("card");
  data.card.forEach(([label, value]) => {
    const tr = card.insertRow();
    tr.insertCell().textContent = label;
    tr.insertCell().textContent = value;
  });
  document.getElementById("head-close").addEventListener("click", () => {
    document.getElementById("head-panel").hidden = true;
  });
  fillTable();
  if (data.frames) {
    frames.simplex = buildFrames(data.frames.simplex, data.frames.parity);
    frames.triangle = buildFrames(data.frames.triangle, data.frames.parity);
  }
  const gallery = { data, plots, frames, showHead, shown: null };
  window.headformsGallery = gallery;
  gallery.ready = Promise.all(
    ["simplex", "triangle", "energy", "pairing", "parity"].map((id) =>
      draw(id, data.figures[id], frames[id]),
    ),
  );
})();
