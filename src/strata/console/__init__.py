"""The console's static files (index.html, console.js, console.css), served by
strata.api.routes.console. Package data: no build step, no third-party code."""
