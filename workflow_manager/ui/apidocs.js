// The API docs page (/docs): Swagger UI over the manager's own /openapi.json. A script file
// rather than inline, so the page runs under the UI's Content-Security-Policy (no inline
// script); the validator badge is off, so the page asks nothing of another site.
window.ui = SwaggerUIBundle({
  url: "/openapi.json",
  dom_id: "#swagger-ui",
  layout: "BaseLayout",
  deepLinking: true,
  showExtensions: true,
  showCommonExtensions: true,
  validatorUrl: null,
  presets: [SwaggerUIBundle.presets.apis, SwaggerUIBundle.SwaggerUIStandalonePreset],
});
