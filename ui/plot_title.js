// A figure's title fitted to the plot's width before it is drawn (ui/plot.js calls fitTitle).
// Concatenated before ui/plot.js (ui/plot.py). Linted by eslint (eslint.config.mjs: a classic
// script whose functions plot.js calls).
/* exported fitTitle */

// Fit a title to the plot's width (plotly.js neither wraps nor shrinks titles): shrink it a
// little, never below a title's size (14 px; <sup> lines are drawn at 70 %, so 16 px for a title
// with them, which keeps them at 11 px), then wrap each line that still overflows at a space,
// adding the height the new lines take to the top margin.
const MIN_TITLE_PX = 14;
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
  const sup = lines.some((line) => line.sup);
  const legible = Math.max(MIN_TITLE_PX, Math.ceil(MIN_TEXT_PX / (sup ? SUP_SCALE : 1)));
  const floor = Math.min(size, legible); // a title set smaller on purpose is not enlarged
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
    // plotly.js centres a title's lines on their first line's place: the added lines lift the
    // top by half their height, into the toolbar's band; the pad takes it back down.
    const pad = Object.assign({}, title.pad);
    pad.t = (pad.t || 0) + added / 2;
    title.pad = pad;
  }
}
