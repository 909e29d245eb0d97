// ESLint for the web UI's JavaScript and these tests: the recommended rules, browser globals
// for the UI (plain ES modules, no build step), node's for the tests. Paths are from the
// repository's root: `npm run lint` runs ESLint there with this file (the UI lives outside
// this folder, and ESLint lints nothing above its config's folder otherwise).

import js from "@eslint/js";
import globals from "globals";

export default [
  {
    files: ["workflow_manager/ui/**/*.js"],
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
    // The API docs page loads this one as a classic script, after Swagger UI's bundle.
    files: ["workflow_manager/ui/apidocs.js"],
    languageOptions: {
      sourceType: "script",
      globals: { ...globals.browser, SwaggerUIBundle: "readonly" },
    },
  },
  {
    files: ["ui-tests/**/*.js"],
    ...js.configs.recommended,
    languageOptions: {
      ecmaVersion: 2022,
      sourceType: "module",
      globals: globals.node,
    },
  },
];
