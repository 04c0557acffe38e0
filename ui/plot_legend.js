// Legend visibility kept in the link (ui/plot.py joins this file and ui/plot.js into the
// component's one module): Streamlit cannot bind a legend click, so when Python asks for it
// (data.report_hidden) the plot reports the names of the legend entries hidden now (state value
// "hidden") after each legend click, and draws the figure with the entries Python holds
// (data.hidden: the last reported, or a link's `hide=`) hidden, as a legend click hides them.
// Linted by eslint (eslint.config.mjs, `make lint`).
/* global shownHidden */

// Hide the traces named in data.hidden (before drawing).
function applyHidden(figure, data) {
  if (!data.report_hidden) return;
  const hidden = new Set(data.hidden || []);
  for (const trace of figure.data) {
    if (trace.name !== undefined && hidden.has(trace.name)) trace.visible = "legendonly";
  }
}

// The names of the legend entries hidden now.
function hiddenNames(gd) {
  const names = (gd._fullData || [])
    .filter((trace) => trace.visible === "legendonly" && trace.showlegend !== false)
    .map((trace) => trace.name);
  return Array.from(new Set(names)).sort();
}

// After a restyle (a legend click): report what is hidden, if it changed.
function reportHidden(wrap, gd, update) {
  if (!wrap.hfData.report_hidden) return;
  const changes = (update && update[0]) || {};
  if (!Object.keys(changes).includes("visible")) return;
  const names = hiddenNames(gd);
  const before = JSON.stringify(wrap.hfData.hidden || []);
  if (JSON.stringify(names) === before) return;
  wrap.hfData.hidden = names;
  shownHidden(gd, names); // ui/plot_keep.js: the rerun it causes keeps the plot as it is
  wrap.hfSetState("hidden", names);
}
