// eslint for the dashboard's browser code (`make lint`): the clickable plot component's
// JavaScript (ui/*.js, an ES module run in the browser) and its CSS (ui/*.css).
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
  {
    files: ["ui/**/*.css"],
    plugins: { css },
    language: "css/css",
    rules: css.configs.recommended.rules,
  },
];
