// eslint for the browser code (`make lint`): the dashboard's clickable plot component
// (ui/*.js, an ES module run in the browser, and ui/*.css) and the gallery page written by
// `headforms export` (headforms/gallery/*.js, a classic script beside the embedded plotly.js,
// and its CSS).
import css from "@eslint/css";
import js from "@eslint/js";
import globals from "globals";

export default [
  {
    files: ["ui/**/*.js"],
    ...js.configs.recommended,
    languageOptions: {
      ecmaVersion: 2022,
      sourceType: "module",
      globals: globals.browser,
    },
    rules: {
      ...js.configs.recommended.rules,
      eqeqeq: "error",
      "no-var": "error",
      "prefer-const": "error",
    },
  },
  // ui/plot.py joins ui/plot_labels.js, ui/plot_legend.js and ui/plot.js into one module: the
  // functions the first two define are the last one's.
  {
    files: ["ui/plot_labels.js", "ui/plot_legend.js"],
    rules: {
      "no-unused-vars": [
        "error",
        { varsIgnorePattern: "^(rememberLabels|placeLabels|labelsAfterRelayout|imageOptions|applyHidden|reportHidden)$" },
      ],
    },
  },
  {
    files: ["ui/plot.js"],
    languageOptions: {
      globals: {
        rememberLabels: "readonly",
        placeLabels: "readonly",
        labelsAfterRelayout: "readonly",
        imageOptions: "readonly",
        applyHidden: "readonly",
        reportHidden: "readonly",
      },
    },
  },
  {
    // The component's helper scripts, concatenated before ui/plot.js (ui/plot.py's SCRIPTS):
    // classic scripts whose top-level functions plot.js calls (named in `/* exported */`).
    files: ["ui/plot_*.js"],
    languageOptions: { sourceType: "script" },
  },
  {
    files: ["headforms/gallery/**/*.js"],
    ...js.configs.recommended,
    languageOptions: {
      ecmaVersion: 2022,
      sourceType: "script",
      globals: { ...globals.browser, Plotly: "readonly" },
    },
    rules: {
      ...js.configs.recommended.rules,
      eqeqeq: "error",
      "no-var": "error",
      "prefer-const": "error",
    },
  },
  {
    files: ["ui/**/*.css", "headforms/gallery/**/*.css"],
    plugins: { css },
    language: "css/css",
    rules: css.configs.recommended.rules,
  },
];
