"""The gateway's web UI: plain HTML, CSS and JavaScript modules in ``static/``, served at
``/ui`` by ``services.gateway.ui.routes``. The pages call the gateway's own HTTP API and
event streams (same origin); nothing is built or generated."""
